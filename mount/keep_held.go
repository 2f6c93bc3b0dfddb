package mount

import (
	"net/rpc"
	"os"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/mount/nodes"
	"github.com/sessionfs/sessionfs/mount/takeover"
	"github.com/sessionfs/sessionfs/mount/takeover/nodelog"
)

// held is what a daemon of a held mount keeps, the first one (firstHeld) or one taking over (takenOver): the node
// log its holder keeps a copy of, the gate a hand-over closes, and the socket its lock owners go to the holder on.
type heldDaemon struct {
	user     bool // a normal user's mount (fusermount.go): unconfined, mounted through fusermount3
	nodes    *nodelog.Log
	gate     *takeover.Gate
	locks    *takeover.LockSocket // the lock owners' descriptors go to the holder on it
	handover chan os.Signal       // the holder's ask to hand over, caught from the start of serve (keep_handover.go)
}

func (h *heldDaemon) treeOpened(t *nodes.Tree) {
	if h.locks != nil {
		t.KeepLocks(h.locks)
	}
}

// firstHeld is the first daemon of a held mount: it makes the node log, gives its helper copies of the connection
// and of the log (the helper is then the holder, mount/takeover), notes what it hands the kernel and each change it
// makes, and has the holder keep the kernel's INIT for the daemons after it.
type firstHeld struct{ heldDaemon }

func (*firstHeld) makesMount() bool             { return true }
func (*firstHeld) hasHelper(confined bool) bool { return true }

// openDevice makes the node log; a normal user's mount is made here, through fusermount3 (fusermount.go).
func (f *firstHeld) openDevice(s *startup) (bool, error) {
	if f.user {
		if err := f.mountHeld(s); err != nil {
			return false, err
		}
	}
	var err error
	if f.nodes, err = nodelog.New(); err != nil {
		return f.user, err
	}
	s.onRollback(f.nodes.Close)
	return f.user, nil
}

// helperHolds gives the helper the takeover configuration, the connection, the node log and the lock owners'
// socket.
func (f *firstHeld) helperHolds(s *startup, cfg *helperConfig) ([]int, func(), error) {
	theirs, err := f.lockSocket(s)
	if err != nil {
		return nil, nil, err
	}
	cfg.Takeover = &s.given
	return []int{s.dev, f.nodes.Fd(), theirs}, func() { unix.Close(theirs) }, nil
}

// wrap gates the requests, records the node ids handed to the kernel in the log and notes each change before it
// is made, for a resend to a daemon after this one (takeover.ResendIdempotent).
func (f *firstHeld) wrap(s *startup, nodeFS, raw fuse.RawFileSystem) (fuse.RawFileSystem, error) {
	f.gate, raw = takeover.First(&s.fuse.MountOptions, nodeFS, raw, f.nodes)
	return raw, nil
}

// initialized has the holder keep the INIT, and says the mount is held before it serves (takeover_state.go).
func (f *firstHeld) initialized(s *startup) *rpc.Call {
	call := s.helper.Go("Holder.Initialized", *s.server.KernelSettings(), nil, make(chan *rpc.Call, 1))
	s.sayHeld()
	return call
}

func (*firstHeld) serve(*startup) (bool, error) { return false, nil }

// lockSocket makes the first daemon's socket to its holder, and returns the holder's end, to pass.
func (h *heldDaemon) lockSocket(s *startup) (int, error) {
	k, theirs, err := takeover.NewLockSocket()
	if err != nil {
		return -1, err
	}
	h.locks = k
	s.onRollback(func() { k.Close() })
	return theirs, nil
}

// sayHeld writes, before the mount serves its first request, that its helper holds it: a sessionfs mount that
// comes before the helper has told its state and listens (Initialized) then waits for it (held, Upgrade), where it
// found the mount unheld and refused it as mounted already, within the first milliseconds of every mount (a
// script that upgrades once the mount serves). Not asked of the helper, which is still starting: the mount would
// wait for it.
func (s *startup) sayHeld() {
	if s.helperPID > 0 {
		takeover.SayHeld(s.mnt, s.helperPID)
	}
}
