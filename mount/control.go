package mount

import (
	"fmt"
	"net/rpc"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/mount/inspect"
)

// control stops a mount and says who keeps it busy (Mount's Unmount, Detach, Abort and Users). An unconfined
// mount does it from this process (localControl); a confined one, whose serving process may neither unmount nor
// read /proc, asks its privileged helper (helperControl).
type control interface {
	// unmount detaches the binds, then the mount; an error says it is busy.
	unmount() error
	// detach detaches the binds and the mount lazily: it is served until its last user leaves.
	detach() error
	// abort ends the mount's FUSE connection (fusectl).
	abort() error
	// users lists the processes that keep the mount busy ("pid name").
	users() []string
	// release lets go of what the control holds once the mount is gone (Wait).
	release()
}

// localControl is an unconfined mount's control: this process unmounts, and binds (binds.go) as root.
type localControl struct {
	mnt    string
	server *fuse.Server
	binder *binder // nil when the mount binds nothing
	minor  uint32  // the FUSE connection's number, to abort it once detached
}

// newLocalControl is the control of the mount at mnt, served by server by now.
func newLocalControl(mnt string, server *fuse.Server, bd *binder) *localControl {
	var st syscall.Stat_t
	_ = syscall.Stat(mnt, &st) // the connection is named by the mount's device minor
	return &localControl{mnt: mnt, server: server, binder: bd, minor: unix.Minor(st.Dev)}
}

// unmount: the binds beneath the mount first (a mount with mounts on it is busy), then the mount, which go-fuse
// retries a moment while busy.
func (c *localControl) unmount() error {
	c.release()
	if err := c.server.Unmount(); err != nil {
		return fmt.Errorf("unmount %s: %w", c.mnt, err)
	}
	return nil
}

func (c *localControl) detach() error   { return Unmount(c.mnt) }
func (c *localControl) abort() error    { return inspect.Abort(c.minor) }
func (c *localControl) users() []string { return Users(c.mnt) }

func (c *localControl) release() {
	if c.binder != nil {
		c.binder.close()
	}
}

// helperControl is a confined mount's control: calls to its privileged helper (helper_service.go), which acts on
// its own mountpoint and connection, never on one the serving process names.
type helperControl struct {
	mnt    string
	helper *rpc.Client
}

func (c *helperControl) unmount() error {
	if err := c.helper.Call("Helper.Unmount", struct{}{}, nil); err != nil {
		return fmt.Errorf("unmount %s: %v", c.mnt, err)
	}
	return nil
}

func (c *helperControl) detach() error { return c.helper.Call("Helper.Detach", struct{}{}, nil) }
func (c *helperControl) abort() error  { return c.helper.Call("Helper.Abort", struct{}{}, nil) }

func (c *helperControl) users() []string {
	var out []string
	_ = c.helper.Call("Helper.Users", struct{}{}, &out)
	return out
}

// release: nothing; the helper ends with this process (its socket closes).
func (c *helperControl) release() {}
