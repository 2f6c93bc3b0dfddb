package mount

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/sessionfs/sessionfs/bind"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/mount/nodes"
)

// watcher tells the tree about changes made to the store behind the mount, so the kernel can cache names and
// attributes for long and still show such changes at once.
type watcher struct {
	w      *fsnotify.Watcher
	tree   *nodes.Tree
	binder binds // nil when nothing is bound
	done   chan struct{}
	index  *layout.IndexWatch // what the mount vouches for to ls and find (nil on a shared store)

	// Events lost (lost.go): the pace of forgetting the kernel's caches, and the timer of a forgetting put off
	// (nil: none).
	forgetting forgetting
	forgetDue  <-chan time.Time
}

// pace is how long the watcher rests after each batch of events. Meanwhile fsnotify waits to hand over its next
// event (the channel is unbuffered) and leaves the kernel's queue unread, where the kernel merges an event
// with the one before it when they are the same (an agent's appends to one file: one event per rest, not one
// per write). A change behind the mount still shows within a few milliseconds.
const pace = time.Millisecond

func startWatcher(tree *nodes.Tree, bd binds) (*watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	wa := &watcher{w: w, tree: tree, binder: bd, done: make(chan struct{})}
	tree.SetWatch(w)
	go wa.loop()
	return wa, nil
}

func (wa *watcher) loop() {
	defer close(wa.done)
	for {
		select {
		case ev, ok := <-wa.w.Events:
			if !ok {
				return
			}
			wa.handle(ev)
			// The rest of what fsnotify read (it parses each event before it hands it over: a yield lets it),
			// then a rest.
			for idle := 0; idle < 2; {
				select {
				case ev, ok := <-wa.w.Events:
					if !ok {
						return
					}
					wa.handle(ev)
					idle = 0
				default:
					runtime.Gosched()
					idle++
				}
			}
			time.Sleep(pace)
		case err, ok := <-wa.w.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				wa.eventsLost()
			}
		case <-wa.forgetDue:
			wa.forgetAll()
		}
	}
}

// handle tells the tree of one event, and the binder of a change of names.
func (wa *watcher) handle(ev fsnotify.Event) {
	ns := ev.Has(fsnotify.Create) || ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)
	wa.tree.Changed(nodes.Change{Path: ev.Name, Namespace: ns})
	if ns && wa.binder != nil {
		wa.rebind(ev.Name)
	}
}

func (wa *watcher) close() {
	_ = wa.w.Close()
	<-wa.done
	if wa.index != nil {
		wa.index.Close()
	}
}

// rebind tells the binder of a session made, renamed or removed behind the mount, of a bound folder replaced
// (the kernel detached its bind when its name was invalidated), or of the first entry made in an empty app or
// mcps: the worker binds what is there now.
func (wa *watcher) rebind(p string) {
	rel, ok := strings.CutPrefix(p, wa.tree.Store.SessionsDir()+"/")
	if !ok {
		return
	}
	id, rest, nested := strings.Cut(rel, "/")
	dir, below, inside := strings.Cut(rest, "/")
	switch {
	case !nested || (!inside && slices.Contains(BoundDirs, dir)):
		wa.binder.Want(id)
	case inside && !strings.Contains(below, "/") && bind.Lazy(dir):
		wa.binder.wantFilled(id, dir)
	}
}
