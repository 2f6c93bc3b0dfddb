package takeover

import (
	"sync"
	"syscall"
	"time"
)

// Gate is go-fuse's RequestGate (the takeover patch, third_party/go-fuse/fuse/Gate.go) of a daemon whose
// connection a holder keeps; a hand-over closes it (handover.go): the requests in flight finish, their answers
// written, and those read after wait, unanswered, for the daemon's exit; the kernel then resends them to the daemon
// that takes over.
type Gate struct {
	mu sync.RWMutex // read-held by each request in flight; held by the hand-over
}

func (g *Gate) Enter() { g.mu.RLock() }
func (g *Gate) Leave() { g.mu.RUnlock() }

// Close closes the gate once the requests in flight finished, or within: false when some did not (one waiting on
// something slow, or on another request of this mount).
func (g *Gate) Close(within time.Duration) bool {
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

// HandoverSignal tells a daemon whose connection a holder keeps to hand the mount over (upgrade.go): from the
// holder, its parent or child, which starts the next daemon once this one is gone.
const HandoverSignal = syscall.SIGUSR2
