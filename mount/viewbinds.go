package mount

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/bind"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/mount/nodes"
)

// A transcript view in use is a bind too. An old Claude CLI, or a person's tool, resuming from another cwd appends
// through .claude/projects/<its cwd's name>, a FUSE view of the canonical folder: each append's open and close is a
// round trip to the daemon. Once something is written through a view (the tree asks: nodes/view.go, after it
// recorded the name as an alias), the same worker binds the store's canonical folder onto the view's name, by
// descriptor both ends as a session's folders (binds.go), counted in the same limit.
//
// The tree gives each ask a number (seq) and takes a session's view binds back (ReleaseViews) before it answers a
// lookup of any other name of the session's transcript folder: two names of one folder would be two mounts there,
// and a rename between them EXDEV (Claude Code's /cd moves a transcript so, then copies it onto itself and removes
// the source: the whole conversation gone). An ask numbered at or below a release is stale and binds nothing.
//
// A view bind is released when idle: every viewIdlePoll the worker unmounts it unless a process holds a file or a
// working folder inside (the kernel refuses a plain unmount then), as the limit releases a session (Mount.Release).
// umount2(MNT_EXPIRE) would also wait for a whole interval without a path walked inside, but it refuses a mount
// anyone holds a descriptor of, the binder too; and the bind's own descriptor is what lets a lookup or a removal
// detach it from inside a FUSE request without walking a path (a walk there can wait on a folder's lock the request
// holds), while a descriptor on the FUSE mount instead would keep `sessionfs unmount` busy. An agent that appends
// on after a release pays one append through FUSE, which asks for the bind again.

// viewIdlePoll is how often view binds are released when nothing inside is held.
const viewIdlePoll = 2 * time.Second

// viewBind is a view bound over the mount.
type viewBind struct {
	*bind.Mount
	name     string // the view's name in the session's transcript folder
	dev, ino uint64 // the canonical folder it shows
}

// viewWant is a view the tree asked to bind.
type viewWant struct {
	name string
	seq  uint64
}

var (
	_ nodes.ViewBinder = (*binder)(nil)
	_ nodes.ViewBinder = (*remoteBinder)(nil)
)

// BindView asks the worker to bind session id's canonical transcript folder onto its view name. It never blocks.
func (b *binder) BindView(id, name string, seq uint64) {
	if layout.ValidateID(id) != nil || !claude.IsFolderName(name) || name == layout.CanonicalProject {
		return
	}
	b.mu.Lock()
	if b.closed || seq <= b.viewReleased[id] || b.views[id] != nil && b.views[id].name == name {
		b.mu.Unlock()
		return
	}
	b.viewWants[id] = viewWant{name, seq}
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// ReleaseViews detaches session id's view binds (lazily: a process inside keeps its files) and forgets what was
// asked up to seq, before it returns: inside a FUSE request, through the folder the bind is on (one name walked).
func (b *binder) ReleaseViews(id string, seq uint64) {
	if layout.ValidateID(id) != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.viewReleased) >= maxUsed {
		b.viewReleased = map[string]uint64{} // bounded: a serving process sending endless ids
	}
	if seq > b.viewReleased[id] {
		b.viewReleased[id] = seq
	}
	delete(b.viewWants, id)
	b.dropView(id)
}

// dropView detaches session id's view bind through its descriptor (no path walked) and forgets it. b.mu is held.
func (b *binder) dropView(id string) {
	if v := b.views[id]; v != nil {
		_ = v.Detach()
		delete(b.views, id)
	}
}

// bindViews binds the views asked for (the worker, between sessions).
func (b *binder) bindViews() {
	for {
		b.mu.Lock()
		var id string
		var w viewWant
		for id, w = range b.viewWants {
			break
		}
		if id == "" || b.closed {
			b.mu.Unlock()
			return
		}
		delete(b.viewWants, id)
		b.mu.Unlock()
		b.bindView(id, w)
		b.limit(id)
	}
}

// bindView binds session id's canonical transcript folder onto view w's name in the mount: the folder opened
// beneath the session with no symlink and no mount crossed (a link, a FIFO, another session's folder is
// ErrNotFolder: nothing is bound), the view opened beneath the mount's root the same way (already bound: EXDEV).
func (b *binder) bindView(id string, w viewWant) {
	rel := id + "/" + layout.ProjectsDir + "/" + layout.CanonicalProject
	src, err := bind.OpenFolder(b.sessions.Fd(), rel)
	if err != nil {
		return
	}
	defer unix.Close(src)
	var st unix.Stat_t
	if unix.Fstat(src, &st) != nil {
		return
	}
	root, err := unix.Open(b.mountpoint, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	target, err := bind.OpenPlace(root, "sessions/"+id+"/"+layout.ProjectsDir+"/"+w.name)
	unix.Close(root)
	if err != nil {
		return
	}
	defer unix.Close(target)
	var flags bind.Flags
	if b.readOnly {
		flags |= bind.ReadOnly
	}
	tree, err := bind.Clone(src, flags)
	if err != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// Checked with the lock held, which a removal and a release take: the folder is still the session's, and
	// nothing asked meanwhile that this view be left to FUSE.
	now, err := b.sessions.Lstat(rel)
	if b.closed || b.removing[id] > 0 || w.seq <= b.viewReleased[id] || b.views[id] != nil ||
		err != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		tree.Close()
		return
	}
	m, err := tree.AttachTo(target)
	if err != nil {
		return
	}
	b.views[id] = &viewBind{Mount: m, name: w.name, dev: st.Dev, ino: st.Ino}
}

// expireViews releases the view binds nothing is inside of (the worker, every viewIdlePoll), and detaches those
// whose canonical folder is not the store's any more (removed or replaced behind the mount, by a run that binds the
// store's folder: nobody invalidates a view's name then, and appends would go on in a folder no name leads to).
func (b *binder) expireViews() {
	b.mu.Lock()
	ids := make([]string, 0, len(b.views))
	for id, v := range b.views {
		now, err := b.sessions.Lstat(id + "/" + layout.ProjectsDir + "/" + layout.CanonicalProject)
		if err != nil || now.Dev != v.dev || now.Ino != v.ino {
			b.dropView(id)
			continue
		}
		ids = append(ids, id)
	}
	b.mu.Unlock()
	for _, id := range ids {
		b.releaseView(id)
	}
}

// releaseView removes session id's view bind unless a process uses it; it reports whether it is gone. As release,
// it walks the mount's folders, so it holds no lock meanwhile: the bind is taken out of the table first, and put
// back if it stays, but detached if a release or a removal came meanwhile.
func (b *binder) releaseView(id string) bool {
	b.mu.Lock()
	v := b.views[id]
	delete(b.views, id)
	released, removals := b.viewReleased[id], b.removals[id]
	b.mu.Unlock()
	if v == nil {
		return true
	}
	gone := true
	if root, err := unix.Open(b.mountpoint, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		parent, err := bind.OpenPlace(root, "sessions/"+id+"/"+layout.ProjectsDir)
		unix.Close(root)
		if err == nil {
			gone, _ = v.Release(parent, v.name)
			unix.Close(parent)
		} else {
			v.Close() // the transcript folder is gone from the mount: the kernel detached the bind
		}
	}
	if gone {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.removing[id] > 0 || b.removals[id] != removals || b.viewReleased[id] != released ||
		b.views[id] != nil {
		_ = v.Detach()
		return true
	}
	b.views[id] = v
	return false
}
