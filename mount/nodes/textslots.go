package nodes

import (
	"context"
	"sync"
	"time"
)

// renderSlots shares out the text view's rendering slots (textcache.go) among sessions and the uids that read
// them. A rendering cannot be stopped half-way once made (it reads what the session wrote, at its pace), so a
// share is a cap, not a turn: a session holds at most perSession slots and a uid at most perUID, whoever else
// waits, so that however long one session's renderings are, another session finds a slot free. Waiters are served
// fairly: a freed slot goes to the waiter whose session holds the fewest slots, then whose uid does, then the first
// come. A wait ends when its caller is interrupted, or once no slot at all was given back for its bound.
type renderSlots struct {
	mu         sync.Mutex
	total      int
	perSession int
	perUID     int
	busy       int
	sessions   map[string]int
	uids       map[uint32]int
	queue      []*slotWaiter // in the order they came
	turns      uint64        // slots given back so far: a waiter's wait ends only when none was for its bound
}

// slotWaiter is a rendering waiting for a slot; ready is closed once it holds one.
type slotWaiter struct {
	session string
	uid     uint32
	ready   chan struct{}
	granted bool
}

func newRenderSlots(total, perSession, perUID int) *renderSlots {
	return &renderSlots{total: total, perSession: perSession, perUID: perUID,
		sessions: map[string]int{}, uids: map[uint32]int{}}
}

// acquire takes a slot for a rendering of session's, for uid, waiting while slots are given back and at most
// wait with none given back (ctx cancelled: at once). It returns false when none was given; release gives back
// one that was.
func (s *renderSlots) acquire(ctx context.Context, session string, uid uint32, wait time.Duration) bool {
	s.mu.Lock()
	w := &slotWaiter{session: session, uid: uid, ready: make(chan struct{})}
	s.queue = append(s.queue, w)
	s.grant()
	turns := s.turns
	s.mu.Unlock()
	timer := time.NewTimer(wait)
	defer timer.Stop()
wait:
	for {
		select {
		case <-w.ready:
			return true
		case <-ctx.Done():
			break wait
		case <-timer.C:
			// Slots given back meanwhile: the queue moves, and this waiter's turn comes (48 readers of one
			// session's 48 long renderings, one at a time on 2 cores, wait 38 s for the last, each a
			// moment). None in all that time: the renderings that hold them are stuck, and the caller is told.
			s.mu.Lock()
			moved := s.turns != turns
			turns = s.turns
			s.mu.Unlock()
			if !moved {
				break wait
			}
			timer.Reset(wait)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.granted { // given meanwhile: handed on
		s.free(w.session, w.uid)
		s.grant()
		return false
	}
	for i, q := range s.queue {
		if q == w {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			break
		}
	}
	return false
}

// release gives back a slot acquire gave.
func (s *renderSlots) release(session string, uid uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free(session, uid)
	s.grant()
}

func (s *renderSlots) free(session string, uid uint32) {
	s.busy--
	s.turns++
	if s.sessions[session]--; s.sessions[session] == 0 {
		delete(s.sessions, session)
	}
	if s.uids[uid]--; s.uids[uid] == 0 {
		delete(s.uids, uid)
	}
}

// grant gives free slots to the waiters within their shares, the least served session first.
func (s *renderSlots) grant() {
	for s.busy < s.total {
		best := -1
		for i, w := range s.queue {
			if s.sessions[w.session] >= s.perSession || s.uids[w.uid] >= s.perUID {
				continue
			}
			if best < 0 || s.sessions[w.session] < s.sessions[s.queue[best].session] ||
				s.sessions[w.session] == s.sessions[s.queue[best].session] && s.uids[w.uid] < s.uids[s.queue[best].uid] {
				best = i
			}
		}
		if best < 0 {
			return
		}
		w := s.queue[best]
		s.queue = append(s.queue[:best], s.queue[best+1:]...)
		s.busy++
		s.sessions[w.session]++
		s.uids[w.uid]++
		w.granted = true
		close(w.ready)
	}
}
