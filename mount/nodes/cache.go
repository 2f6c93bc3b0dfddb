package nodes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/bind"
	"github.com/sessionfs/sessionfs/layout"
)

// The kernel caches names and attributes for a long time; what changes behind the mount (the CLI, a container
// bound to the plain store, an editor on the store) is made visible by invalidating exactly what changed. The
// mount's watcher reports store changes to Changed; the nodes tell the cache which folders the kernel holds
// (so they are watched) and which changes they made themselves (so those cost no invalidation).

// Watch is told to start or stop watching a store folder. Set by the mount; nil means no watching.
type Watch interface {
	Add(path string) error
	Remove(path string) error
}

type cache struct {
	mu    sync.Mutex
	watch Watch
	// Paths are relative to the store's sessions folder, as the nodes know them ("." is that folder).
	dirs map[string][]*fs.Inode // store folder -> the inodes showing it (several for alias views)
	own  map[string]ownChange   // store path -> a change made through the mount, awaiting its event
	open map[string]*openFile   // store path -> files open for writing through the mount
	// store path -> an attributes-only invalidation due: the events of one burst of writes are coalesced
	attrsDue map[string]bool
	// checked: when each bound folder (<id>/<dir>) was last checked for its bind (boundCheck)
	checked map[string]time.Time
	// unwatched: a folder the kernel holds could not be watched (out of inotify watches), so what it shows
	// may change unseen: from then on the kernel is given the mount's plain timeout (Tree.timeout).
	unwatched atomic.Bool
}

// timeout is how long the kernel may keep a name or attributes given now. While the watcher follows every
// folder the kernel holds, a change behind the mount invalidates exactly what it changed, so the kernel may
// keep them for long (WatchedTimeout): a walk of a tree a minute later costs no LOOKUP or GETATTR. Once a
// folder could not be watched, the mount's own timeout bounds how stale a name can look.
func (t *Tree) timeout() time.Duration {
	if t.WatchedTimeout > 0 && t.cache.watch != nil && !t.cache.unwatched.Load() {
		return t.WatchedTimeout
	}
	return t.Timeout
}

// attrsDelay coalesces the attribute invalidations of a file open for writing: a burst of writes (each an
// event) costs one kernel notification, sent this long after the first.
const attrsDelay = 2 * time.Millisecond

// openFile counts a path's writers; closed is when the last one went, since its events trail it.
type openFile struct {
	n      int
	closed time.Time
}

// ownChange is a change the mount made at a path, made by the folder inode origin.
type ownChange struct {
	origin *fs.Inode
	at     time.Time
}

// ownTTL bounds how long a change made through the mount waits for its event.
const ownTTL = 2 * time.Second

// SetWatch installs the store watcher. Call before mounting.
func (t *Tree) SetWatch(w Watch) {
	t.cache.mu.Lock()
	defer t.cache.mu.Unlock()
	t.cache.watch = w
	t.cache.dirs = map[string][]*fs.Inode{}
	t.cache.own = map[string]ownChange{}
	t.cache.open = map[string]*openFile{}
	t.cache.attrsDue = map[string]bool{}
	t.cache.checked = map[string]time.Time{}
}

// watchFolder registers in as a kernel-cached view of store folder path, watching the folder if it is the first.
func (t *Tree) watchFolder(path string, in *fs.Inode) {
	c := &t.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watch == nil || slices.Contains(c.dirs[path], in) {
		return
	}
	if len(c.dirs[path]) == 0 {
		if err := c.watch.Add(t.abs(path)); err != nil {
			// Out of watches: names there stay cached until they time out. (A folder already gone
			// shows nothing the kernel could keep; one past PATH_MAX deep, which inotify cannot name, is a
			// session's own odd tree, not the host's limit to report.)
			if !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ENOTDIR) && !errors.Is(err, syscall.ENAMETOOLONG) &&
				!c.unwatched.Swap(true) {
				why := err.Error()
				if errors.Is(err, syscall.ENOSPC) {
					why = "out of inotify watches: raise fs.inotify.max_user_watches"
				}
				fmt.Fprintf(os.Stderr, "sessionfs: cannot watch %s (%s): changes made behind the mount in folders not "+
					"watched show within %s, not at once\n", t.abs(path), why, t.Timeout)
			}
			return
		}
	}
	c.dirs[path] = append(c.dirs[path], in)
}

// unwatchFolder drops a forgotten view of path, and the folder's watch with the last.
func (t *Tree) unwatchFolder(path string, in *fs.Inode) {
	c := &t.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watch == nil {
		return
	}
	ins := slices.DeleteFunc(c.dirs[path], func(x *fs.Inode) bool { return x == in })
	if len(ins) > 0 {
		c.dirs[path] = ins
		return
	}
	delete(c.dirs, path)
	_ = c.watch.Remove(t.abs(path))
}

// noteOwnChange records a change at store path made through the mount by the folder inode origin (nil: not a
// change of names), so its event costs no invalidation of origin.
func (t *Tree) noteOwnChange(path string, origin *fs.Inode) {
	c := &t.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watch != nil {
		c.own[path] = ownChange{origin: origin, at: time.Now()}
	}
}

// countWriters counts a file open for writing through the mount (delta +1 at open, -1 at release): the kernel
// knows what those writes did.
func (t *Tree) countWriters(path string, delta int) {
	c := &t.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watch == nil {
		return
	}
	o := c.open[path]
	if o == nil {
		o = &openFile{}
		c.open[path] = o
	}
	if o.n += delta; o.n <= 0 {
		o.n, o.closed = 0, time.Now()
	}
	if len(c.open) > 4096 {
		for p, o := range c.open {
			if o.n == 0 && time.Since(o.closed) >= ownTTL {
				delete(c.open, p)
			}
		}
	}
}

// writer is a file handle open for writing through the mount: while it is open, and shortly after, the
// watcher leaves the kernel's attributes of the file alone, since the kernel saw those writes itself.
type writer struct {
	*heldFile // charged to its opener until released (opens.go)
	tree      *Tree
	path      string
}

var (
	_ = (fs.FileReleaser)((*writer)(nil))
	_ = (fs.FilePassthroughFder)((*writer)(nil))
)

func (t *Tree) writer(path string, h *heldFile) fs.FileHandle {
	if t.cache.watch == nil {
		return h
	}
	t.countWriters(path, +1)
	return &writer{heldFile: h, tree: t, path: path}
}

func (w *writer) Release(ctx context.Context) syscall.Errno {
	w.tree.countWriters(w.path, -1)
	return w.heldFile.Release(ctx)
}

// abs is the absolute path of a store path relative to the sessions folder, for the watcher (inotify takes paths).
func (t *Tree) abs(rel string) string {
	if rel == "." {
		return t.Store.SessionsDir()
	}
	return t.Store.SessionsDir() + "/" + rel
}

// Change is one event from the store watcher.
type Change struct {
	Path      string // absolute, as the watcher reports it
	Namespace bool   // created, removed or renamed; otherwise content or attributes
}

// Changed invalidates what the kernel caches of a store change that the mount did not make itself. It runs in
// the watcher's goroutine, never inside a FUSE operation.
func (t *Tree) Changed(ch Change) {
	rel, ok := strings.CutPrefix(ch.Path, t.Store.SessionsDir()+"/")
	if !ok {
		return
	}
	c := &t.cache
	dir, name := filepath.Dir(rel), filepath.Base(rel)
	t.boundCheck(rel)
	t.boundViewCheck(rel)
	c.mu.Lock()
	views := slices.Clone(c.dirs[dir])
	if !ch.Namespace {
		// Content or attributes: checked once for a burst of events, a moment after its first, and only for a
		// file the kernel holds (an agent's appends to a file nobody looked up through the mount cost nothing).
		due := c.attrsDue[rel]
		c.mu.Unlock()
		if due || !anyChild(views, name) {
			return
		}
		c.mu.Lock()
		if !c.attrsDue[rel] {
			c.attrsDue[rel] = true
			time.AfterFunc(attrsDelay, func() { t.recheck(dir, name, rel) })
		}
		c.mu.Unlock()
		return
	}
	var origin *fs.Inode
	if own, ok := c.own[rel]; ok {
		delete(c.own, rel)
		if time.Since(own.at) < ownTTL {
			origin = own.origin
		}
	}
	if len(c.own) > 4096 {
		for p, own := range c.own {
			if time.Since(own.at) >= ownTTL {
				delete(c.own, p)
			}
		}
	}
	c.mu.Unlock()
	for _, v := range views {
		if v != origin {
			v.NotifyEntry(name)
			v.NotifyContent(0, 0) // the folder's attributes and its cached listing
		}
	}
}

// anyChild reports whether any of the folder inodes views holds a child called name.
func anyChild(views []*fs.Inode, name string) bool {
	for _, v := range views {
		if v.GetChild(name) != nil {
			return true
		}
	}
	return false
}

// recheck drops the kernel's attributes of name in every view of folder dir, unless they are still the store
// file's: its ctime is the one last given to the kernel. A change made through the mount (a write, a chmod, a
// utimes) was answered with the new attributes, so its events cost nothing; any other change moves the ctime.
// A file open for writing through the mount loses its attributes only: its data is the store file's
// (passthrough), which the kernel does not cache.
func (t *Tree) recheck(dir, name, rel string) {
	c := &t.cache
	c.mu.Lock()
	delete(c.attrsDue, rel)
	views := slices.Clone(c.dirs[dir])
	o := c.open[rel]
	writing := o != nil && (o.n > 0 || time.Since(o.closed) < ownTTL)
	c.mu.Unlock()
	var cached []*fs.Inode
	for _, v := range views {
		if child := v.GetChild(name); child != nil {
			cached = append(cached, child)
		}
	}
	if len(cached) == 0 {
		return
	}
	ctime := int64(-1) // gone or unreadable: whatever the kernel holds is stale
	var st syscall.Stat_t
	if _, err := t.lstatAt(rel, &st); err == nil {
		ctime = st.Ctim.Nano()
	}
	for _, child := range cached {
		if n, ok := asNode(child); ok && ctime >= 0 {
			if given := n.ctime.Load(); given == ctime || given == kernelAsks {
				continue
			}
		}
		if writing {
			child.NotifyContent(-1, 0) // a negative offset: attributes only
		} else {
			child.NotifyContent(0, 0)
		}
	}
}

// kernelAsks in Node.ctime: the kernel dropped the node's attributes itself and asks for them when next used.
const kernelAsks = -2

// noteCtime records the ctime of the attributes given to the kernel for in (see Node.ctime).
func noteCtime(in *fs.Inode, a *fuse.Attr) {
	if n, ok := asNode(in); ok {
		n.ctime.Store(int64(a.Ctime)*1e9 + int64(a.Ctimensec))
	}
}

// ChangedAll invalidates what the kernel caches under every watched folder, for when store events were lost. A
// folder that is still the one the kernel holds (same inode, same birth) keeps its name and loses only its
// attributes and listing: binds sit on those names (a container's /session/workspace, a CSI pod's, the mount's
// own), and the kernel detaches every mount on or beneath a name it drops, in every namespace. A session that
// overflows the queue must not take every session's binds down. Any other name is dropped.
func (t *Tree) ChangedAll() {
	c := &t.cache
	c.mu.Lock()
	dirs := make(map[string][]*fs.Inode, len(c.dirs))
	for p, ins := range c.dirs {
		dirs[p] = slices.Clone(ins)
	}
	c.mu.Unlock()
	for p, views := range dirs {
		// The store is asked once for a folder that several views hold as the same one.
		type held struct {
			name     string
			ino, gen uint64
		}
		kept := map[held]bool{}
		for _, v := range views {
			for name, child := range v.Children() {
				a := child.StableAttr()
				k := held{name, a.Ino & storeIno, a.Gen}
				same, asked := kept[k]
				if !asked {
					same = t.sameFolder(filepath.Join(p, name), child)
					kept[k] = same
				}
				if same {
					child.NotifyContent(0, 0)
				} else {
					v.NotifyEntry(name)
				}
			}
			v.NotifyContent(0, 0)
		}
	}
}

// sameFolder reports whether store path rel is a folder still, and the very one in stands for: its inode number
// (below the view and filesystem numbers mixed in) and its birth.
func (t *Tree) sameFolder(rel string, in *fs.Inode) bool {
	held := in.StableAttr()
	if held.Mode != syscall.S_IFDIR {
		return false
	}
	var st syscall.Stat_t
	gen, err := t.lstatAt(rel, &st)
	if err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return false
	}
	return held.Ino&storeIno == st.Ino&storeIno && held.Gen == gen
}

// storeIno keeps the store's own inode number of a node's, below the view and filesystem numbers mixed in.
const storeIno = 1<<aliasShift - 1

// boundCheckEvery bounds how often a bound folder's events make the daemon look for its bind.
const boundCheckEvery = time.Second

// boundCheck: an event came from store path rel. A folder the mount binds (a session's workspace, app or mcps, or
// beneath) is watched only once FUSE served a request there: before its bind was made, or after it was released
// (Node.servedHere). Once its bind is there, the kernel serves it without FUSE and the watch only costs the daemon
// an event per write: the watches go, each to be made again at the next request FUSE serves there.
func (t *Tree) boundCheck(rel string) {
	id, rest, _ := strings.Cut(rel, "/")
	dir, _, _ := strings.Cut(rest, "/")
	if t.Binder == nil || !bind.IsMountDir(dir) {
		return
	}
	key := id + "/" + dir
	if !t.cache.checkDue(key, boundCheckEvery) || !t.boundOver(key) {
		return
	}
	t.unwatchBeneath(key, nil)
}

// checkDue reports whether the bind over key may be looked for now, at most once every: it records the time.
func (c *cache) checkDue(key string, every time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.checked[key]) < every {
		return false
	}
	if len(c.checked) > 4096 {
		clear(c.checked)
	}
	c.checked[key] = time.Now()
	return true
}

// unwatchBeneath drops the watches of store folder key and its subfolders, for the inodes below accepts (all when
// nil): a bind serves them now. Each is watched again at the next request FUSE serves there (watchLater). What
// the kernel keeps of these folders through FUSE would be stale by the time the bind is released (what happens
// through the bind reaches no watch): dropped now, while the bind hides them. Their inodes, never the names the
// binds sit on (that would detach them).
func (t *Tree) unwatchBeneath(key string, below func(*fs.Inode) bool) {
	c := &t.cache
	c.mu.Lock()
	var stale []*fs.Inode
	for p, ins := range c.dirs {
		if p != key && !strings.HasPrefix(p, key+"/") {
			continue
		}
		kept := ins[:0]
		for _, in := range ins {
			if below != nil && !below(in) {
				kept = append(kept, in)
				continue
			}
			if n, ok := asNode(in); ok {
				n.watchLater.Store(&p)
			}
			stale = append(stale, in)
		}
		if len(kept) > 0 {
			c.dirs[p] = kept
			continue
		}
		delete(c.dirs, p)
		_ = c.watch.Remove(t.abs(p))
	}
	c.mu.Unlock()
	for _, in := range stale {
		for name := range in.Children() {
			in.NotifyEntry(name)
		}
		in.NotifyContent(0, 0)
	}
}

// boundOver reports whether something is mounted over the mount's folder sessions/<key>: its device is not the
// mount's. The path is walked from the watcher's goroutine, never inside a FUSE request; its names are cached.
// It is walked beneath the mountpoint, no symlink followed: its names are a session's (a .claude made a link to
// anywhere on the host was stat'ed there, however slow or hung what it reached, and another device passed for a
// bind).
func (t *Tree) boundOver(key string) bool {
	if t.Mountpoint == "" {
		return false
	}
	mfd, err := unix.Open(t.Mountpoint, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(mfd)
	fd, err := layout.OpenBeneath(mfd, "sessions/"+key, unix.O_PATH, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var root, st unix.Stat_t
	if unix.Fstat(mfd, &root) != nil || unix.Fstat(fd, &st) != nil {
		return false
	}
	return st.Dev != root.Dev
}
