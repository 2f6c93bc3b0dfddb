package mount

import (
	"errors"
	"net/rpc"
	"sync"

	"github.com/sessionfs/sessionfs/mount/nodes"
)

// remoteBinder is a confined mount's binder as the serving process sees it: calls to the privileged helper
// (helper_service.go). Want is called on every lookup inside a session folder, a walk of a thousand sessions makes
// thousands: they are gathered and sent together by one sender, a call per burst rather than a round trip (and two
// context switches) per lookup.
type remoteBinder struct {
	c *rpc.Client

	mu      sync.Mutex
	pending []string
	queued  map[string]bool
	wake    chan struct{}
}

func newRemoteBinder(c *rpc.Client) *remoteBinder {
	r := &remoteBinder{c: c, queued: map[string]bool{}, wake: make(chan struct{}, 1)}
	go r.send()
	return r
}

// send sends what want gathered, a batch at a time, until the connection ends.
func (r *remoteBinder) send() {
	for range r.wake {
		r.mu.Lock()
		ids := r.pending
		r.pending, r.queued = nil, map[string]bool{}
		r.mu.Unlock()
		if len(ids) > 0 && errors.Is(r.c.Call("Helper.Want", ids, nil), rpc.ErrShutdown) {
			return
		}
	}
}

// call sends a call without waiting for its answer (nothing here may block a FUSE request).
func (r *remoteBinder) call(method string, arg any) {
	r.c.Go(method, arg, nil, make(chan *rpc.Call, 1))
}

func (r *remoteBinder) Want(id string) {
	r.mu.Lock()
	if !r.queued[id] {
		r.queued[id] = true
		r.pending = append(r.pending, id)
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *remoteBinder) wantFilled(id, dir string) { r.call("Helper.WantFilled", [2]string{id, dir}) }
func (r *remoteBinder) wantBound()                { r.call("Helper.WantBound", struct{}{}) }

// BindView asks the helper to bind a transcript view in use (viewbinds.go), without waiting.
func (r *remoteBinder) BindView(id, name string, seq uint64) {
	r.call("Helper.BindView", ViewArgs{ID: id, Name: name, Seq: seq})
}

// ReleaseViews waits for session id's view binds to be detached (a lookup of another name, inside its request).
func (r *remoteBinder) ReleaseViews(id string, seq uint64) {
	_ = r.c.Call("Helper.ReleaseViews", ViewArgs{ID: id, Seq: seq}, nil)
}

// Removing waits for session id's binds to be detached (a removal through the mount, inside its request).
func (r *remoteBinder) Removing(id string) (done func()) {
	var token uint64
	if err := r.c.Call("Helper.Removing", id, &token); err != nil {
		return func() {}
	}
	return func() { _ = r.c.Call("Helper.Removed", token, nil) }
}

// begin tells tree the helper's binder thread (its lookups through the mount are not uses), then starts the
// helper's binder. Not waited for: the helper is still starting, and the mount serves meanwhile.
func (r *remoteBinder) begin(tree *nodes.Tree) {
	go func() {
		var tid int
		if r.c.Call("Helper.Thread", struct{}{}, &tid) == nil {
			tree.SetBinderThread(tid)
		}
		_ = r.c.Call("Helper.Begin", struct{}{}, nil)
	}()
}
