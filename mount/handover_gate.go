package mount

import (
	"sync"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// gated is a daemon's file system behind a gate that a hand-over closes (handover.go): the requests in flight
// finish, and those read after wait, unanswered, for the daemon's exit; the kernel then resends them to the
// daemon that takes over. Its methods are handover_gated.go.
type gated struct {
	fuse.RawFileSystem
	gate sync.RWMutex // read-held by each request in flight; held by the hand-over
}

func (g *gated) enter() { g.gate.RLock() }
func (g *gated) leave() { g.gate.RUnlock() }

// close closes the gate once the requests in flight finished, or within: false when some did not (one waiting on
// something slow, or on another request of this mount).
func (g *gated) close(within time.Duration) bool {
	closed := make(chan struct{})
	go func() {
		g.gate.Lock() // never unlocked: the process exits
		close(closed)
	}()
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case <-closed:
		return true
	case <-t.C:
		return false
	}
}
