package nodes

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/sessionfs/sessionfs/layout"
)

// Tree is the state every node of one mount shares: the store it serves, the numbering of views, the watched
// folders, the lock table, the sessions' last uses. Package mount makes it (NewTree), sets its hooks (Binder,
// Mountpoint, SetBinderThread, SetWatch) before mounting, and mounts NewRoot(tree).
type Tree struct {
	Store *layout.Store
	// Mountpoint is where the tree is mounted: a session made by mkdir trusts its workspace there.
	Mountpoint string
	// Binder binds sessions' folders over the mount (the mount's binder, or its helper's); nil binds nothing.
	Binder Binder
	// ReadOnly: the daemon changes nothing in the store on its own (no folding, no canonical folder made again,
	// no alias records); the kernel refuses the callers' changes.
	ReadOnly bool
	// Timeout is how long the kernel caches names and attributes (the mount's); the answers to SETATTR carry
	// it too. WatchedTimeout, when set, is given instead while the watcher follows every folder the kernel
	// holds (see timeout).
	Timeout, WatchedTimeout time.Duration
	// IndexWatch, when set, answers IndexFile: the sessions whose index records the mount vouches for.
	IndexWatch *layout.IndexWatch

	sessions *layout.Dir // the store's sessions folder: every access is resolved beneath it (at.go)
	locks    lockTable   // the lock owners' files (locks.go)
	dev      uint64      // its filesystem

	viewNums sync.Map // view key (viewsRow.viewKey) -> uint64 view number, stable for the mount's life (views.go)
	viewKeys sync.Map // uint64 view number -> view key
	nextView atomic.Uint64
	// lookedUpIn: inode number of a node in a transcript folder -> the view it was last looked up through. A file
	// is one inode under every view, so opening it for writing is put down to that view. Kept while the kernel
	// holds the node (OnForget): by path, it kept every name any view was ever looked up by, for good.
	lookedUpIn      sync.Map
	devs            sync.Map // st_dev -> uint64 filesystem number (the store's is 0)
	nextDev         atomic.Uint64
	aliasesRecorded sync.Map // id + "/" + name -> struct{}: aliases recorded in session.json (aliases.go)
	cache           cache
	live            atomic.Int64 // nodes of sessions the kernel may hold (prune.go)
	lastUse         sync.Map     // session id -> *atomic.Int64: when it was last used, for pruning
	// viewsFolded: the store paths of the views folders with entries of their own already folded in this mount
	// (views_dir.go)
	viewsFolded sync.Map
	removals    removals      // conversations being removed to the trash (trash.go)
	binder      atomic.Uint32 // the thread that binds sessions' folders: its lookups are not uses (SetBinderThread)
	viewBinds   viewBinds     // the transcript views bound over the mount (view.go)
	// sessionNodes: the session folders' nodes by identity (session_nodes.go)
	sessionNodesMu sync.Mutex
	sessionNodes   sessionNodes
}

// Binder is told of what the nodes see happen to sessions, so the folders bound over the mount follow them.
type Binder interface {
	// Want: the kernel looked session id up (its folders are bound then). It must not block.
	Want(id string)
	// Removing: session id is about to be removed through the mount, inside the request; done is called once
	// the removal is over.
	Removing(id string) (done func())
}

// SetBinderThread names the thread that binds sessions' folders over the mount: the lookups it makes walking a
// session's path are not told to the Binder, so walking a session does not make it the most recently used.
func (t *Tree) SetBinderThread(tid int) { t.binder.Store(uint32(tid)) }

// byBinder reports whether the request comes from the binder's thread.
func (t *Tree) byBinder(ctx context.Context) bool {
	c, ok := fuse.FromContext(ctx)
	return ok && c.Pid != 0 && c.Pid == t.binder.Load()
}

// noteUse records that session id was used now, unless by the binder's walk (prune.go).
func (t *Tree) noteUse(ctx context.Context, id string) {
	if !t.byBinder(ctx) {
		t.touch(id)
	}
}

// wantBinds tells the binder that session id was looked up (its folders are bound then), unless by the binder
// itself.
func (t *Tree) wantBinds(ctx context.Context, id string) {
	if t.Binder != nil && !t.byBinder(ctx) {
		t.Binder.Want(id)
	}
}

// removing tells the binder that session id is about to be removed; the caller calls what it returns once done.
func (t *Tree) removing(id string) (done func()) {
	if t.Binder == nil {
		return func() {}
	}
	return t.Binder.Removing(id)
}

// NewTree returns the shared state for a mount of store. It holds the store's sessions folder open.
func NewTree(store *layout.Store) (*Tree, error) {
	d, err := openSessions(store)
	if err != nil {
		return nil, err
	}
	var st syscall.Stat_t
	if _, err := fstat(d.Fd(), &st); err != nil {
		d.Close()
		return nil, err
	}
	return &Tree{Store: store, sessions: d, dev: st.Dev}, nil
}

// Close releases the sessions folder.
func (t *Tree) Close() error { return t.sessions.Close() }

func (t *Tree) statfs(out *fuse.StatfsOut) syscall.Errno {
	var s syscall.Statfs_t
	if err := syscall.Fstatfs(t.sessions.Fd(), &s); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStatfsT(&s)
	return 0
}

// Sessions is the store's sessions folder the tree holds open (every access is resolved beneath it).
func (t *Tree) Sessions() *layout.Dir { return t.sessions }

// LastUsed is when session id was last looked up or used through the mount (unix nanoseconds; 0: never).
func (t *Tree) LastUsed(id string) int64 { return t.lastUsed(id) }
