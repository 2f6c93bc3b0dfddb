package mount

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/bind"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/mount/nodes"
)

// Where the daemon can mount (root, a direct mount), each session's heavy folders on the mount are kernel binds
// of the store's own folders: <mnt>/sessions/<id>/workspace is the store's workspace/, so a shell, a `grep -r`
// or a person's own `docker run -v <mnt>/sessions/<id>:/session` (Docker binds recursively) works at the disk's
// speed, and FUSE serves only what must be synthetic: the session folders, .claude and its views, by-claude-id.
//
// A bind is never made from inside a FUSE request (mounting walks the mount's own path, whose lookups this daemon
// answers): one worker makes them, after a session's first lookup, for new sessions the watcher sees, and at start
// for the most recently active ones. Both ends are held by descriptor: the store folder opened beneath the
// session with no symlink followed, the mount's folder opened beneath the mount's root with no symlink and no
// mount crossed, so a session that swaps a folder for a link, a FIFO or anything else gets nothing bound, and
// never anything outside itself. Each bind is nosuid and nodev, as the mount is (read-only with --read-only).
//
// The daemon keeps each bind's own descriptor, and detaches a bind through it (umount of /proc/self/fd/N walks
// no FUSE path), which is what lets rm -rf of a session through the mount (a FUSE request) detach its binds
// before the session goes to the trash. The kernel detaches a bind itself when the watcher invalidates its
// folder's name (the store's folder was replaced, or the session removed or renamed behind the mount); the
// watcher's event then makes the worker bind the new folder. Names and attributes of a bound folder are cached
// as any other folder's: its entry stays valid while the store's folder is the same, and nothing beneath it
// reaches FUSE.

// BoundDirs are the folders of a session bound over the mount (bind.MountDirs: app and mcps once they hold
// something).
var BoundDirs = bind.MountDirs

// DefaultMaxBinds is how many sessions are bound at once by default: Docker and systemd read the whole mount
// table at every container start and every mount event, so each bound session (one to three mounts) costs every
// container start a little (README, Performance); the sessions in use at once are far fewer.
const DefaultMaxBinds = 256

// binds is a mount's binder as Start wires it into the tree and the watcher: this process's (binder, an
// unconfined root mount), or the privileged helper's (remoteBinder, a confined mount).
type binds interface {
	nodes.Binder
	// wantFilled: a first entry was made in a lazy folder (bind.Lazy) of session id.
	wantFilled(id, dir string)
	// wantBound: events were lost; every bound session is checked.
	wantBound()
	// begin starts the binder once tree knows the thread it walks the mount from.
	begin(tree *nodes.Tree)
}

// bound is one folder bound over the mount.
type bound struct {
	*bind.Mount
	dev, ino uint64 // the store folder it shows
}

// binder makes and removes the binds of one mount.
type binder struct {
	mountpoint string
	sessions   *layout.Dir // the store's sessions folder
	max        int
	readOnly   bool
	lastUsed   func(ids []string) map[string]int64 // unix nanoseconds; 0 if never

	mu       sync.Mutex
	bound    map[string]map[string]*bound // id -> folder -> bind
	removing map[string]int               // sessions being removed: nothing is bound there
	removals map[string]int               // removals of each session so far (release puts back nothing removed meanwhile)
	queued   map[string]bool
	retries  map[string]int // sessions whose folders the mount did not show yet (a mkdir in flight)
	// The transcript views bound (viewbinds.go): at most one a session, the views asked for, and the last ask
	// each session's release covers.
	views        map[string]*viewBind
	viewWants    map[string]viewWant
	viewReleased map[string]uint64
	// prefetch: queued sessions bound only while there is room (the recently active ones at start): they never
	// push out a session someone used.
	prefetch map[string]bool
	queue    []string
	churn    churn // how many bound sessions may be pushed out now (bindlimit.go)
	closed   bool
	wake     chan struct{} // never closed: want may send after close
	done     chan struct{}
	stopped  chan struct{}
	// The worker walks the mount's paths from one thread of its own (tid), and starts once the mount knows it
	// (started): the lookups it causes are not uses of a session (walking one would otherwise make it the most
	// recently used, and push out the one a person just opened).
	tid       chan int
	started   chan struct{}
	startOnce sync.Once
}

func newBinder(mountpoint string, sessions *layout.Dir, max int, readOnly bool, lastUsed func([]string) map[string]int64) *binder {
	b := &binder{mountpoint: mountpoint, sessions: sessions, max: max, readOnly: readOnly, lastUsed: lastUsed,
		bound: map[string]map[string]*bound{}, removing: map[string]int{}, removals: map[string]int{}, queued: map[string]bool{}, retries: map[string]int{}, prefetch: map[string]bool{},
		views: map[string]*viewBind{}, viewWants: map[string]viewWant{}, viewReleased: map[string]uint64{},
		wake: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{}),
		tid: make(chan int, 1), started: make(chan struct{})}
	go b.loop()
	return b
}

// Want asks the worker to bind session id's folders (or to check the ones it has). It never blocks.
func (b *binder) Want(id string) { b.enqueue(id, false) }

// enqueue queues session id for the worker; a prefetch is bound only while there is room. A session someone uses
// (a lookup, an event) is never a prefetch, whatever queued it first.
func (b *binder) enqueue(id string, prefetch bool) {
	if layout.ValidateID(id) != nil {
		return
	}
	b.mu.Lock()
	if !prefetch {
		delete(b.prefetch, id)
	}
	if b.closed || b.queued[id] {
		b.mu.Unlock()
		return
	}
	if prefetch {
		b.prefetch[id] = true
	}
	b.queued[id] = true
	b.queue = append(b.queue, id)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// wantFilled asks the worker to bind folder dir of a bound session once something is made in it (app and mcps are
// bound only when they hold something). Events of a folder already bound cost nothing.
func (b *binder) wantFilled(id, dir string) {
	b.mu.Lock()
	filled := b.bound[id] != nil && b.bound[id][dir] == nil
	b.mu.Unlock()
	if filled {
		b.Want(id)
	}
}

// wantBound asks the worker to check every bound session (events were lost).
func (b *binder) wantBound() {
	b.mu.Lock()
	ids := slices.Collect(func(yield func(string) bool) {
		for id := range b.bound {
			if !yield(id) {
				return
			}
		}
	})
	b.mu.Unlock()
	for _, id := range ids {
		b.Want(id)
	}
}

// wantRecent queues the most recently active sessions, up to the limit (at start).
func (b *binder) wantRecent() {
	ents, err := b.sessions.ReadDir(".")
	if err != nil {
		return
	}
	type recent struct {
		id    string
		mtime int64
	}
	var all []recent
	for _, e := range ents {
		if !e.IsDir() || layout.ValidateID(e.Name()) != nil {
			continue
		}
		st, err := b.sessions.Lstat(e.Name())
		if err != nil {
			continue
		}
		all = append(all, recent{e.Name(), st.Mtim.Nano()})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].mtime > all[j].mtime })
	for i := 0; i < len(all) && i < b.max; i++ {
		b.enqueue(all[i].id, true)
	}
}

// thread is the worker's thread id, once it has one.
func (b *binder) thread() int {
	tid := <-b.tid
	b.tid <- tid
	return tid
}

// begin tells tree the worker's thread and lets the worker begin (an unconfined root mount's binder).
func (b *binder) begin(tree *nodes.Tree) {
	tree.SetBinderThread(b.thread())
	b.start()
}

// start lets the worker begin: the mount ignores the lookups of its thread by now.
func (b *binder) start() { b.startOnce.Do(func() { close(b.started) }) }

func (b *binder) loop() {
	defer close(b.stopped)
	runtime.LockOSThread() // for good: the thread ends with the worker
	b.tid <- unix.Gettid()
	select {
	case <-b.done:
		return
	case <-b.started:
	}
	expire := time.NewTicker(viewIdlePoll)
	defer expire.Stop()
	for {
		select {
		case <-b.done:
			return
		case <-expire.C:
			b.expireViews()
			continue
		case <-b.wake:
		}
		for {
			b.mu.Lock()
			if b.closed || len(b.queue) == 0 {
				b.mu.Unlock()
				b.bindViews()
				b.limitLater()
				break
			}
			id := b.queue[0]
			b.queue = b.queue[1:]
			delete(b.queued, id)
			full := b.prefetch[id] && b.boundCount() >= b.max && b.bound[id] == nil && b.views[id] == nil
			delete(b.prefetch, id)
			b.mu.Unlock()
			if full {
				continue // a prefetch finds no room: it pushes out no one
			}
			if !b.roomFor(id) {
				continue // a walk past the limit: served through FUSE, bound when next wanted
			}
			b.refresh(id)
			b.limit(id) // at once: a walk of thousands of sessions must not bind them all first
		}
	}
}

// refresh makes session id's binds match its store folders: a bind whose folder was replaced or detached is
// removed, a folder not bound is bound.
func (b *binder) refresh(id string) {
	root, err := unix.Open(b.mountpoint, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	// Held only while it works: a descriptor on the mount would make a plain unmount busy.
	defer unix.Close(root)
	later := false
	for _, dir := range BoundDirs {
		rel := id + "/" + dir
		var st unix.Stat_t
		// Read access (O_DIRECTORY: a FIFO is ENOTDIR, never opened) to tell an empty folder.
		src, err := b.sessions.OpenAt(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err == nil {
			if err = unix.Fstat(src, &st); err != nil {
				unix.Close(src)
			}
		}
		b.mu.Lock()
		cur := b.bound[id][dir]
		b.mu.Unlock()
		if cur != nil {
			if err == nil && cur.dev == st.Dev && cur.ino == st.Ino && cur.At(root, "sessions/"+rel) {
				unix.Close(src)
				continue
			}
			b.mu.Lock()
			b.drop(id, dir)
			b.mu.Unlock()
		}
		if err != nil {
			continue // gone, a symlink, a FIFO: nothing is bound
		}
		if bind.Lazy(dir) && isEmpty(src) {
			unix.Close(src)
			continue // bound once something is made in it (the watcher's event)
		}
		err = b.make(root, id, dir, src, &st)
		unix.Close(src)
		switch {
		case errors.Is(err, unix.ENOENT):
			// The store has it and the mount does not show it yet: a mkdir of the session through the mount is
			// still in flight (its lookup found the name missing), or a name found missing is still cached.
			later = true
		case err != nil && !errors.Is(err, unix.EXDEV):
			fmt.Fprintf(os.Stderr, "sessionfs: bind %s/%s over the mount: %v (it is served through FUSE)\n", id, dir, err)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !later {
		delete(b.retries, id)
		return
	}
	if b.retries[id]++; b.retries[id] <= 10 {
		time.AfterFunc(time.Duration(b.retries[id])*20*time.Millisecond, func() { b.Want(id) })
	} else {
		delete(b.retries, id)
	}
}

// make binds the store folder src (session id's dir, described by st) over the mount's own folder.
func (b *binder) make(root int, id, dir string, src int, st *unix.Stat_t) error {
	// The mount's folder, beneath its root: something mounted there already is EXDEV, so the bind lands on this
	// mount's folder of this session and nowhere else.
	target, err := bind.OpenPlace(root, "sessions/"+id+"/"+dir)
	if err != nil {
		return err
	}
	defer unix.Close(target)
	flags := bind.Recursive
	if b.readOnly {
		flags |= bind.ReadOnly
	}
	tree, err := bind.Clone(src, flags)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// Checked with the lock held, which a removal takes before it moves the session: the folder is still the
	// session's (not moved to the trash since it was opened), and no removal is under way.
	now, err := b.sessions.Lstat(id + "/" + dir)
	if b.closed || b.removing[id] > 0 || err != nil || now.Dev != st.Dev || now.Ino != st.Ino || b.bound[id][dir] != nil {
		tree.Close()
		return nil
	}
	m, err := tree.AttachTo(target)
	if err != nil {
		return err
	}
	if b.bound[id] == nil {
		b.bound[id] = map[string]*bound{}
	}
	b.bound[id][dir] = &bound{Mount: m, dev: st.Dev, ino: st.Ino}
	return nil
}

// isEmpty reports whether the folder open at fd holds nothing (an unreadable one counts as holding something).
func isEmpty(fd int) bool {
	buf := make([]byte, 1024)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return false
		}
		if n <= 0 {
			return true
		}
		var names []string
		if _, _, names = unix.ParseDirent(buf[:n], 1, names); len(names) > 0 { // . and .. are left out
			return false
		}
	}
}

// drop detaches session id's bind of dir through its descriptor (lazily: a process inside keeps its folder) and
// forgets it. b.mu is held.
func (b *binder) drop(id, dir string) {
	cur := b.bound[id][dir]
	if cur == nil {
		return
	}
	_ = cur.Detach()
	delete(b.bound[id], dir)
	if len(b.bound[id]) == 0 {
		delete(b.bound, id)
	}
}

// removing detaches session id's binds and binds nothing there until done is called: for a removal of the
// session through the mount, inside its FUSE request (no path is walked).
func (b *binder) Removing(id string) (done func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.removing[id]++
	b.removals[id]++
	for _, dir := range BoundDirs {
		b.drop(id, dir)
	}
	b.dropView(id)
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.removing[id]--; b.removing[id] <= 0 {
			delete(b.removing, id)
		}
	}
}

// binderStopWait bounds close's wait for the worker. At an upgrade's exec the daemon is gone, and a worker
// looking up the place it binds over waits for the next daemon, which starts only after the exec: waiting for it,
// the holder and every user of the mount waited for good (once in 1,300 upgrades). Once closed the worker binds
// nothing (make checks), and its thread goes with the exec.
const binderStopWait = time.Second

// close stops the worker and detaches every bind (before the mount itself is unmounted).
// workerStopped says whether the worker returned (close waits for it at most binderStopWait).
func (b *binder) workerStopped() bool {
	select {
	case <-b.stopped:
		return true
	default:
		return false
	}
}

func (b *binder) close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	b.mu.Unlock()
	close(b.done)
	select {
	case <-b.stopped:
	case <-time.After(binderStopWait):
		fmt.Fprintf(os.Stderr, "sessionfs: the binds' worker waits on the mount (no daemon serves it): the binds are dropped without it\n")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for id := range b.bound {
		for _, dir := range BoundDirs {
			b.drop(id, dir)
		}
	}
	for id := range b.views {
		b.dropView(id)
	}
}
