package nodes

import (
	"context"
	"hash/fnv"

	"github.com/hanwen/go-fuse/v2/fs"
)

// sessionNodes are the session folders' nodes the kernel may hold, by identity. A session renamed behind the
// mount (`sessionfs rename`, a mv in the store) keeps its inode and birth time, so its new name has its old
// name's identity; while the kernel still holds the node of the old name (a bind being detached, an open file),
// go-fuse hands that node back for the new name (it keeps one node per identity), and that node is anchored at
// the old name: every lookup in it finds nothing, for as long as the kernel caches the new name. So a session
// folder whose identity is held by another session's node gets an identity of its own, as a new folder would.
type sessionNodes struct {
	byAttr map[fs.StableAttr]*SessionDir
}

// renamedTries bounds the identities tried for one name: each mixes in the name, so a second one is taken only
// by a 64-bit collision.
const renamedTries = 4

// sessionNode is session id's node of identity attr: the node the kernel holds for it, or a new one.
func (s *Sessions) sessionNode(ctx context.Context, id string, attr fs.StableAttr) *fs.Inode {
	t := s.tree
	t.sessionNodesMu.Lock()
	defer t.sessionNodesMu.Unlock()
	r := &t.sessionNodes
	if r.byAttr == nil {
		r.byAttr = map[fs.StableAttr]*SessionDir{}
	}
	for try := range renamedTries {
		old := r.byAttr[attr]
		if old != nil && !old.Forgotten() && old.id == id {
			return &old.Inode
		}
		if old == nil || old.Forgotten() || try == renamedTries-1 {
			break
		}
		// The folder's old name's node: its watch goes now, so the new name's is a watch of its own (fsnotify
		// drops a moved folder's watch when it reads the move, and with it the new name's had they shared one).
		old.unwatch()
		attr.Gen = renamedGen(attr.Gen, id, try)
	}
	n := &SessionDir{Node{tree: t, base: id, id: id}}
	t.nodeAdded()
	ch := s.NewInode(ctx, n, attr)
	r.byAttr[attr] = n
	n.watch(id)
	return ch
}

// forgetSession drops n, forgotten by the kernel, from the session nodes.
func (t *Tree) forgetSession(n *SessionDir) {
	t.sessionNodesMu.Lock()
	defer t.sessionNodesMu.Unlock()
	if a := n.StableAttr(); t.sessionNodes.byAttr[a] == n {
		delete(t.sessionNodes.byAttr, a)
	}
}

// renamedGen is the generation of a session folder seen under name id while its identity is another name's.
func renamedGen(gen uint64, id string, try int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	h.Write([]byte{byte(try)})
	return gen ^ (h.Sum64() | 1) // never gen itself
}
