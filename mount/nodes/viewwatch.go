package nodes

import (
	"errors"
	"strings"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/bind"
	"github.com/sessionfs/sessionfs/layout"
)

// A transcript view in use is a bind of the canonical folder (view.go), and what the kernel serves through it never
// reaches FUSE. The view's inode stays registered with the watcher, though, and its watch on the canonical folder
// costs every append an inotify event (1.19x an unwatched folder's CPU in a probe of 100,000 appends; 1.07x with
// the narrowest mask that still sees names change, for the parent's dentry is taken at each open, write and close):
// so, as a bound workspace's (cache.go, boundCheck), a bound view's watches go once its events find the bind, each to
// be made again at the next request FUSE serves in the view. The canonical folder stays watched while another of its
// names is served by FUSE (the canonical name listed under projects/, another cwd's view).

// viewCheckEvery bounds how often the events of a canonical folder whose view was asked to be bound make the daemon
// look for the bind. Shorter than a workspace's (boundCheckEvery): the bind lands milliseconds after the first
// appends ask for it, and an agent's burst of appends is over within a second; once the bind is found, the events
// stop.
const viewCheckEvery = 10 * time.Millisecond

// viewAskedLately: a view asked for longer ago than this is checked as a workspace is, at most once a second.
const viewAskedLately = 2 * time.Second

// boundViewCheck: an event came from store path rel. If it is in a session's canonical transcript folder and that
// session's wanted view is bound over the mount, the watches of the view and its subfolders go, and what the kernel
// keeps of them through FUSE is dropped (it would be stale once the bind is released).
func (t *Tree) boundViewCheck(rel string) {
	id, rest, _ := strings.Cut(rel, "/")
	canon := layout.ProjectsDir + "/" + layout.CanonicalProject
	if t.Binder == nil || (rest != canon && !strings.HasPrefix(rest, canon+"/")) {
		return
	}
	t.viewBinds.mu.Lock()
	w := t.viewBinds.wanted[id]
	t.viewBinds.mu.Unlock()
	if w.name == "" {
		return
	}
	every := viewCheckEvery
	if time.Since(w.at) > viewAskedLately {
		every = boundCheckEvery // asked long ago: bound since, or released (a run writing the folder, say)
	}
	key := id + "/" + canon
	// Only the wanted name is walked: a lookup of another name would take the bind back (viewLookedUp).
	name := w.name
	if !t.cache.checkDue(key, every) || !t.viewBoundOver(id, name) {
		return
	}
	t.unwatchBeneath(key, func(in *fs.Inode) bool { return belowView(in, id, name) })
}

// belowView reports whether in is session id's view name of its transcript folder, or beneath it.
func belowView(in *fs.Inode, id, name string) bool {
	for {
		n, ok := asNode(in)
		if !ok || n.id != id {
			return false
		}
		if _, ok := in.Operations().(*View); ok {
			viewName, parent := in.Parent()
			if parent == nil || viewName != name {
				return false
			}
			_, ok := parent.Operations().(*OnlyViewsDir)
			return ok
		}
		_, up := in.Parent()
		if up == nil {
			return false
		}
		in = up
	}
}

// viewBoundOver reports whether something is mounted over session id's transcript view name in the mount. The
// names on the way (.claude, projects) are the session's own, so the walk follows no symlink and crosses no mount
// (bind.OpenPlace): a mount crossed (EXDEV) is the view's bind, the one mount there can be on that way.
func (t *Tree) viewBoundOver(id, name string) bool {
	if t.Mountpoint == "" {
		return false
	}
	root, err := unix.Open(t.Mountpoint, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(root)
	fd, err := bind.OpenPlace(root, "sessions/"+id+"/"+layout.ProjectsDir+"/"+name)
	if err == nil {
		unix.Close(fd)
	}
	return errors.Is(err, unix.EXDEV)
}
