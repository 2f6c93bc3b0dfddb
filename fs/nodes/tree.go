package nodes

import (
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"sync"
	"sync/atomic"

	"github.com/sessionfs/sessionfs/layout"
)

// Tree is the state every node of one mount shares: the store it serves and the numbering of alias views.
type Tree struct {
	Store *layout.Store
	// OnAlias is told when a session first uses a projects folder name other than the canonical one (the
	// mount records it in session.json). It may be nil.
	OnAlias func(id, name string)

	aliasNums sync.Map // alias name -> uint64 view number, stable for the mount's life
	nextAlias atomic.Uint64
	seen      sync.Map // id + "/" + name -> struct{}: aliases already reported to OnAlias
	cache     cache
}

// NewTree returns the shared state for a mount of store.
func NewTree(store *layout.Store) *Tree {
	return &Tree{Store: store}
}

// aliasNum is the view number of a projects folder name: 0 for the canonical folder, a small number unique to the
// name otherwise. It goes into the inode numbers of folders seen through the view.
func (t *Tree) aliasNum(name string) uint64 {
	if name == layout.CanonicalProject {
		return 0
	}
	if n, ok := t.aliasNums.Load(name); ok {
		return n.(uint64)
	}
	n, _ := t.aliasNums.LoadOrStore(name, t.nextAlias.Add(1))
	return n.(uint64)
}

// used notes that session id used alias name, telling OnAlias the first time.
func (t *Tree) used(id, name string) {
	if name == layout.CanonicalProject || t.OnAlias == nil {
		return
	}
	if _, loaded := t.seen.LoadOrStore(id+"/"+name, struct{}{}); !loaded {
		t.OnAlias(id, name)
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

// trashTranscript moves store file p, inside session id's canonical transcript folder, to the transcript trash.
func (t *Tree) trashTranscript(id, p string) syscall.Errno {
	rel, err := filepath.Rel(layout.Derive(t.Store.Dir(id)).Canonical, p)
	if err != nil {
		return syscall.EINVAL
	}
	return storeErrno(t.Store.TrashTranscript(id, rel, time.Now()))
}

// fold moves transcripts filed under real folders of the session's projects (made while the store was not
// mounted) into the canonical folder: through the mount every such name is a view of the canonical folder, and
// would otherwise hide them. The folded names stay in use as aliases.
func (t *Tree) fold(id string) {
	folded, _ := layout.FoldProjects(t.Store.Dir(id))
	for _, name := range folded {
		t.used(id, name)
	}
}
