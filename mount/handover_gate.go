package mount

import (
	"sync"
	"time"
)

// gate is go-fuse's RequestGate (the takeover patch, third_party/go-fuse/fuse/gate.go) of a daemon whose
// connection a holder keeps; a hand-over closes it (handover.go): the requests in flight finish, their answers
// written, and those read after wait, unanswered, for the daemon's exit; the kernel then resends them to the daemon
// that takes over.
type gate struct {
	mu sync.RWMutex // read-held by each request in flight; held by the hand-over
}

func (g *gate) Enter() { g.mu.RLock() }
func (g *gate) Leave() { g.mu.RUnlock() }

// close closes the gate once the requests in flight finished, or within: false when some did not (one waiting on
// something slow, or on another request of this mount).
func (g *gate) close(within time.Duration) bool {
	closed := make(chan struct{})
	go func() {
		g.mu.Lock() // never unlocked: the process exits
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
