package mount

import (
	"fmt"
	"net/rpc"
	"os"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/sessionfs/sessionfs/mount/nodes"
	"github.com/sessionfs/sessionfs/mount/takeover"
)

// takenOver is a daemon taking a held connection over (keep.go's keeper): it mounts nothing and starts no helper
// (it was given the connection, the node log and its socket to the holder), and serves the connection once the
// kernel's node ids are restored and the requests the daemon before had read are resent.
type takenOver struct {
	heldDaemon
	taking takeover.Taking
}

func (*takenOver) makesMount() bool                  { return false }
func (*takenOver) hasHelper(bool) bool               { return false } // the holder that started it
func (*takenOver) openDevice(*startup) (bool, error) { return true, nil }
func (*takenOver) helperHolds(*startup, *helperConfig) ([]int, func(), error) {
	return nil, func() {}, nil
}
func (*takenOver) initialized(*startup) *rpc.Call { return nil } // the holder has the INIT: it gave it

// wrap makes go-fuse's server of the connection taken over (takeover.Taking.Server).
func (t *takenOver) wrap(s *startup, nodeFS, raw fuse.RawFileSystem) (fuse.RawFileSystem, error) {
	t.taking.Log, t.taking.User, t.taking.Holder = t.nodes, t.user, s.helper
	gate, server, err := t.taking.Server(&s.fuse.MountOptions, nodeFS, raw, s.tree)
	if err != nil {
		return nil, err
	}
	t.gate, s.server = gate, server
	return raw, nil
}

// serve, confined by now (a root mount's), restores the node ids the kernel holds, asks the kernel to resend what
// the dead daemon had read, and serves (takeover.Taking.Serve).
func (t *takenOver) serve(*startup) (bool, error) {
	t.taking.Serve()
	return true, nil
}

// treeOpened takes the socket to the holder (descriptor takeover.LocksFD) and adopts the lock owners' descriptors
// the holder kept (before the confinement: the kernel says what each holds in /proc), then keeps the tree's new
// ones with the holder.
func (t *takenOver) treeOpened(tree *nodes.Tree) {
	t.locks = takeover.TakenLockSocket()
	t.adoptLocks(tree)
	t.heldDaemon.treeOpened(tree)
}

// adoptLocks takes over the lock owners' descriptors the holder kept, before this daemon serves.
func (h *heldDaemon) adoptLocks(tree *nodes.Tree) {
	if h.locks == nil {
		fmt.Fprintf(os.Stderr, "sessionfs: no socket to the holder: the POSIX locks held through the mount are lost\n")
		return
	}
	owners, fds, err := h.locks.Received()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sessionfs: %v: the POSIX locks held through the mount before may be lost\n", err)
	}
	if len(owners) > 0 {
		adopted := tree.AdoptLockOwners(owners, fds)
		fmt.Fprintf(os.Stderr, "sessionfs: %d POSIX lock owners adopted of %d kept\n", adopted, len(owners))
	}
}
