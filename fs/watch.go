package fs

import (
	"errors"

	"github.com/fsnotify/fsnotify"

	"github.com/sessionfs/sessionfs/fs/nodes"
)

// watcher tells the tree about changes made to the store behind the mount, so the kernel can cache names and
// attributes for long and still show such changes at once.
type watcher struct {
	w    *fsnotify.Watcher
	tree *nodes.Tree
	done chan struct{}
}

func startWatcher(tree *nodes.Tree) (*watcher, error) {
	w, err := fsnotify.NewBufferedWatcher(4096)
	if err != nil {
		return nil, err
	}
	wa := &watcher{w: w, tree: tree, done: make(chan struct{})}
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
			ns := ev.Has(fsnotify.Create) || ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)
			wa.tree.Changed(nodes.Change{Path: ev.Name, Namespace: ns})
		case err, ok := <-wa.w.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				wa.tree.ChangedAll() // events were lost: forget every cached name
			}
		}
	}
}

func (wa *watcher) close() {
	_ = wa.w.Close()
	<-wa.done
}
