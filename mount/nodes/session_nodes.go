package nodes

import (
	"context"

	"github.com/hanwen/go-fuse/v2/fs"
)

// sessionNodes are the session folders' nodes the kernel may hold, by identity. A session renamed behind the
// mount (`sessionfs rename`, a mv in the store) keeps its inode and birth time, so its new name has its old
// name's identity; while the kernel still holds the node of the old name (a bind being detached, an open file),
// go-fuse would hand that node back for the new name (it keeps one node per identity), and that node is anchored
// at the old name: every lookup in it found nothing, for as long as the kernel cached the new name. So the old
// name's node is retired (third_party/go-fuse's patch 0009) and the new name gets a node of its own, of the same
// identity, which a daemon taking over makes again as it is.
type sessionNodes struct {
	byAttr map[fs.StableAttr]*SessionDir
}

// sessionNode is session id's node of identity attr: the node the kernel holds for it, or a new one.
func (s *Sessions) sessionNode(ctx context.Context, id string, attr fs.StableAttr) *fs.Inode {
	t := s.tree
	t.sessionNodesMu.Lock()
	defer t.sessionNodesMu.Unlock()
	r := &t.sessionNodes
	if r.byAttr == nil {
		r.byAttr = map[fs.StableAttr]*SessionDir{}
	}
	if old := r.byAttr[attr]; old != nil {
		if old.id == id && !old.Forgotten() {
			return &old.Inode
		}
		if old.id != id {
			// The folder's old name's node. Its watch goes now, so the new name's is a watch of its own
			// (fsnotify drops a moved folder's watch when it reads the move, and with it the new name's had they
			// shared one); OnForget, which takes this lock first, finds nothing left to do.
			old.unwatch()
			old.Retire()
		}
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
