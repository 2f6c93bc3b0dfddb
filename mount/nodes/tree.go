package nodes

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/sessionfs/sessionfs/layout"
)

// Tree is the state every node of one mount shares: the store it serves and the numbering of alias views.
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

	sessions *layout.Dir // the store's sessions folder: every access is resolved beneath it (at.go)
	locks    lockTable   // the lock owners' files (locks.go)
	dev      uint64      // its filesystem

	aliasNums  sync.Map // alias name -> uint64 view number, stable for the mount's life
	aliasNames sync.Map // uint64 view number -> alias name
	// lookedUpIn: store path of a file in a transcript folder -> the view it was last looked up through. A file
	// is one inode under every view, so opening it for writing is put down to that view.
	lookedUpIn sync.Map
	nextAlias  atomic.Uint64
	devs       sync.Map // st_dev -> uint64 filesystem number (the store's is 0)
	nextDev    atomic.Uint64
	seen       sync.Map // id + "/" + name -> struct{}: aliases already recorded (used)
	cache      cache
	live       atomic.Int64 // nodes of sessions the kernel may hold (prune.go)
	lastUse    sync.Map     // session id -> *atomic.Int64: when it was last used, for pruning
	// viewsFolded: the store paths of the agents' cwd-keyed folders already folded in this mount (views.go)
	viewsFolded sync.Map
	removals    removals      // conversations being removed to the trash (trash.go)
	binder      atomic.Uint32 // the thread that binds sessions' folders: its lookups are not uses (SetBinderThread)
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

// lookedUp tells the binder that session id was looked up, unless by the binder itself.
func (t *Tree) lookedUp(ctx context.Context, id string) {
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

// aliasNum is the view number of a projects folder name: 0 for the canonical folder, a small number unique to the
// name otherwise. It goes into the inode numbers of folders seen through the view.
func (t *Tree) aliasNum(name string) uint64 {
	if name == layout.CanonicalProject {
		return 0
	}
	if n, ok := t.aliasNums.Load(name); ok {
		return n.(uint64)
	}
	n, loaded := t.aliasNums.LoadOrStore(name, t.nextAlias.Add(1))
	if !loaded {
		t.aliasNames.Store(n, name)
	}
	return n.(uint64)
}

// wroteThrough notes that something was written through view number view of session id: an alias is recorded
// when it is written through, never when it is only looked at (a listing, a stat).
func (t *Tree) wroteThrough(id string, view uint64) {
	if view == 0 {
		return
	}
	if name, ok := t.aliasNames.Load(view); ok {
		t.used(id, name.(string))
	}
}

// used notes that session id used alias name, recording it in session.json the first time.
func (t *Tree) used(id, name string) {
	if name == layout.CanonicalProject || t.ReadOnly {
		return
	}
	if _, loaded := t.seen.LoadOrStore(id+"/"+name, struct{}{}); !loaded {
		// Off the request path: a lookup should not wait for session.json's fsync.
		go func() {
			_, _ = t.Store.Update(id, func(m *layout.Meta) error { m.AddAlias(name); return nil })
		}()
	}
}

// forget drops alias name of session id from session.json.
func (t *Tree) forget(id, name string) {
	t.seen.Delete(id + "/" + name)
	_, _ = t.Store.Update(id, func(m *layout.Meta) error {
		m.Aliases = slices.DeleteFunc(m.Aliases, func(a string) bool { return a == name })
		return nil
	})
}

// canonical is the path of session id's canonical transcript folder, relative to the sessions folder.
func canonical(id string) string {
	return id + "/" + layout.ProjectsDir + "/" + layout.CanonicalProject
}

// fold moves transcripts filed under real folders of the session's projects (made while the store was not
// mounted) into the canonical folder: through the mount every such name is a view of the canonical folder, and
// would otherwise hide them. The folded names stay in use as aliases. A read-only mount leaves them.
func (t *Tree) fold(id string) {
	if t.ReadOnly {
		return
	}
	folded, _ := t.Store.Fold(id)
	for _, name := range folded {
		t.used(id, name)
	}
}

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
