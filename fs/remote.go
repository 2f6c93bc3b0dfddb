package fs

import (
	"errors"
	"fmt"
	"net/rpc"
	"slices"
	"sync"

	"github.com/sessionfs/sessionfs/fs/nodes"
	"github.com/sessionfs/sessionfs/layout"
)

// The two processes of a confined mount (split.go) talk over two socket pairs with net/rpc: the serving process
// asks the privileged one to bind (Binder), the privileged one asks the serving one when sessions were used
// (Tree). Nothing else crosses: session ids, folder names, and times. The privileged side treats what it is
// sent as a session's input: ids are checked by the id rule (binder.enqueue, Removing), folder names against
// the list.

// binderService is the privileged side's binder, as the serving process calls it.
type binderService struct {
	b     *binder
	ready chan string // the serving process's report once it serves

	mu       sync.Mutex
	removals map[uint64]func()
	next     uint64
}

// errNoBinder answers binding calls to a mount that binds nothing (--max-binds 0).
var errNoBinder = errors.New("this mount binds nothing")

// Want binds session id's folders (binder.want).
func (s *binderService) Want(id string, _ *struct{}) error {
	if s.b == nil {
		return errNoBinder
	}
	s.b.want(id)
	return nil
}

// WantFilled binds a lazy folder once it holds something (binder.wantFilled).
func (s *binderService) WantFilled(idDir [2]string, _ *struct{}) error {
	if !slices.Contains(lazyDirs, idDir[1]) {
		return fmt.Errorf("%q is not a folder bound once it holds something", idDir[1])
	}
	if s.b == nil {
		return errNoBinder
	}
	s.b.wantFilled(idDir[0], idDir[1])
	return nil
}

// WantBound checks every bound session (binder.wantBound).
func (s *binderService) WantBound(_ struct{}, _ *struct{}) error {
	if s.b == nil {
		return errNoBinder
	}
	s.b.wantBound()
	return nil
}

// Removing detaches session id's binds before a removal through the mount; Removed ends it.
func (s *binderService) Removing(id string, token *uint64) error {
	if err := layout.ValidateID(id); err != nil {
		return err
	}
	if s.b == nil {
		return errNoBinder
	}
	done := s.b.removingSession(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	s.removals[s.next] = done
	*token = s.next
	return nil
}

// Removed ends the removal Removing began.
func (s *binderService) Removed(token uint64, _ *struct{}) error {
	s.mu.Lock()
	done := s.removals[token]
	delete(s.removals, token)
	s.mu.Unlock()
	if done != nil {
		done()
	}
	return nil
}

// Ready is the serving process saying it serves, with its confinement.
func (s *binderService) Ready(report string, _ *struct{}) error {
	select {
	case s.ready <- report:
	default:
	}
	return nil
}

// remoteBinder is the binder as the serving process sees it: calls to the privileged process.
type remoteBinder struct{ c *rpc.Client }

// call sends a call without waiting for its answer (want must never block a FUSE request).
func (r remoteBinder) call(method string, arg any) {
	r.c.Go(method, arg, nil, make(chan *rpc.Call, 1))
}

func (r remoteBinder) want(id string)            { r.call("Binder.Want", id) }
func (r remoteBinder) wantFilled(id, dir string) { r.call("Binder.WantFilled", [2]string{id, dir}) }
func (r remoteBinder) wantBound()                { r.call("Binder.WantBound", struct{}{}) }

// removingSession waits for session id's binds to be detached (a removal through the mount, inside its request).
func (r remoteBinder) removingSession(id string) (done func()) {
	var token uint64
	if err := r.c.Call("Binder.Removing", id, &token); err != nil {
		return func() {}
	}
	return func() { _ = r.c.Call("Binder.Removed", token, nil) }
}

// treeService is the serving process's tree, as the privileged process asks it.
type treeService struct{ tree *nodes.Tree }

// LastUsed is when each of ids was last used through the mount (unix nanoseconds; 0: never).
func (s *treeService) LastUsed(ids []string, out *map[string]int64) error {
	*out = lastUsed(s.tree, ids)
	return nil
}

// remoteLastUsed asks the serving process (nothing known if it cannot answer: every session counts as idle).
func remoteLastUsed(c *rpc.Client) func([]string) map[string]int64 {
	return func(ids []string) map[string]int64 {
		var out map[string]int64
		if err := c.Call("Tree.LastUsed", ids, &out); err != nil {
			return map[string]int64{}
		}
		return out
	}
}
