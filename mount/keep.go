package mount

import (
	"net/rpc"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/sessionfs/sessionfs/mount/nodes"
)

// keeper is how long the mount's connection lasts: continuity, a mode of the start-up as the confinement is. Start
// picks one, and each step asks it only where continuity changes what the step does:
//
//   - plainMount (below): the connection ends with this process;
//   - firstHeld (keep_held.go): the first daemon of a mount whose helper holds the connection, so that a daemon
//     killed is replaced and a new build takes the mount over (package mount/takeover);
//   - takenOver (keep_takeover.go): a daemon the holder started to take a held connection over.
type keeper interface {
	// makesMount: this start-up makes the mount (checks its places, mounts, starts its helper). A daemon taking a
	// connection over serves a mount that is there, and nothing may touch its mountpoint before it serves.
	makesMount() bool
	// hasHelper: the mount has a helper: confined, for its privileged work; held, the holder, a normal user's too.
	hasHelper(confined bool) bool
	// openDevice opens what the mode keeps before the helper starts; opened: the /dev/fuse descriptor is open (the
	// start-up opens one itself otherwise, when confined).
	openDevice(s *startup) (opened bool, err error)
	// helperHolds fills in what the helper holds (cfg.Takeover) and returns the descriptors it is passed; passed
	// runs once they were.
	helperHolds(s *startup, cfg *helperConfig) (fds []int, passed func(), err error)
	// treeOpened tells the tree what the mode keeps.
	treeOpened(t *nodes.Tree)
	// wrap wraps the raw file system served: the requests gated, noted, resent; it may make the server itself
	// (s.server).
	wrap(s *startup, nodeFS, raw fuse.RawFileSystem) (fuse.RawFileSystem, error)
	// initialized tells the helper of the kernel's INIT before the mount serves: the call to await, nil for none.
	initialized(s *startup) *rpc.Call
	// serve serves the connection when the mode has a way of its own (a connection taken over): served false
	// leaves it to the start-up.
	serve(s *startup) (served bool, err error)
	// catchHandover and awaitHandover: a held mount's hand-over to a new build (keep_handover.go), caught from the start
	// of serve and awaited once it serves.
	catchHandover()
	awaitHandover(s *startup)
}

// plainMount keeps nothing: the connection ends with the process that serves it.
type plainMount struct{}

func (plainMount) makesMount() bool                  { return true }
func (plainMount) hasHelper(confined bool) bool      { return confined }
func (plainMount) openDevice(*startup) (bool, error) { return false, nil }
func (plainMount) helperHolds(*startup, *helperConfig) ([]int, func(), error) {
	return nil, func() {}, nil
}
func (plainMount) treeOpened(*nodes.Tree) {}
func (plainMount) wrap(_ *startup, _, raw fuse.RawFileSystem) (fuse.RawFileSystem, error) {
	return raw, nil
}
func (plainMount) initialized(*startup) *rpc.Call { return nil }
func (plainMount) serve(*startup) (bool, error)   { return false, nil }
func (plainMount) catchHandover()                 {}
func (plainMount) awaitHandover(*startup)         {}
