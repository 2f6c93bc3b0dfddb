package mount

import (
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/mount/nodes"
)

// Mount serves store at mountpoint until Unmount. A stale mount left at mountpoint by a crashed daemon is
// cleared first; a live one is an error.
type Mount struct {
	Mountpoint string
	Store      *layout.Store
	// Shared names the store's filesystem when other hosts may change it ("fuse.juicefs", "nfs", "--shared");
	// empty when only this host does.
	Shared string
	// Timeout is how long the kernel caches names and attributes.
	Timeout time.Duration
	// Binding says whether the mount binds sessions' heavy folders (root, --max-binds not 0).
	Binding bool
	// Confinement says what confines the serving process ("" for an unconfined mount).
	Confinement string

	server  *fuse.Server
	watcher *watcher
	tree    *nodes.Tree
	ctl     control       // unmounts, detaches, aborts: this process, or a confined mount's helper (control.go)
	done    chan struct{} // stops the pruner
	scratch func()        // removes the serving process's scratch folder, if one was made
}

// Wait blocks until the mount is unmounted.
func (m *Mount) Wait() error {
	m.server.Wait()
	m.ctl.release()
	close(m.done)
	m.watcher.close()
	m.tree.Close()
	if m.scratch != nil {
		m.scratch()
	}
	return nil
}

// Abort ends the mount's FUSE connection (through fusectl): the processes still using a mount detached lazily get
// errors, and Wait returns.
func (m *Mount) Abort() error { return m.ctl.abort() }

// Detach detaches a busy mount lazily (and its binds): it is served until its last user leaves.
func (m *Mount) Detach() error { return m.ctl.detach() }

// Users lists the processes that keep the mount busy ("pid name").
func (m *Mount) Users() []string { return m.ctl.users() }

// Unmount detaches the mount (retried a moment while the kernel finishes releasing files; the caller can then
// detach a busy one lazily with Detach).
func (m *Mount) Unmount() error { return m.ctl.unmount() }
