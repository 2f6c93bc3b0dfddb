package nodes

import (
	"context"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// View is <views folder>/<name>: the canonical entry of a row of the views table (views.go) seen under one of its
// view names. It is an anchor at the canonical entry's store path, so what is below it is the canonical entry's,
// and carries the name's view number, so its folders have inode numbers of their own (the kernel refuses a folder
// reachable under two names; files are one inode under every view). Its descendants carry its row: below a view of
// the transcript folder, writes record the name as an alias and unlink moves to the trash (passthrough.go). A row
// with an Own file (Gemini's .project_root, the cwd a name belongs to) keeps that file the name's own: the file of
// that name in the store folder named like the view, not the canonical entry's.
type View struct {
	Node
}

var _ = (parentKind)((*View)(nil))

// viewInode is the inode of view v in the views folder parent, of session id: the canonical entry (attributes st)
// seen under v's number. Its answer carries the mount's timeouts.
func (t *Tree) viewInode(ctx context.Context, parent *fs.Inode, id string, v view, st *syscall.Stat_t, gen uint64, out *fuse.EntryOut) *fs.Inode {
	attr := t.stableAttr(st, gen, v.num)
	ch := existingChild(parent, v.name, attr)
	if ch == nil {
		n := &View{Node{tree: t, base: v.target, id: id, alias: v.num, row: v.row}}
		t.nodeAdded()
		ch = parent.NewInode(ctx, n, attr)
		n.watch(v.target)
	}
	out.Attr.FromStat(st)
	out.Attr.Ino = ch.StableAttr().Ino
	noteCtime(ch, &out.Attr)
	return ch
}

// ownChild is the store path of name in the view when name is the row's Own file: the file of that name in the
// store folder named like the view (made by ownFolder), not the canonical entry's.
func (v *View) ownChild(name string) (string, bool) {
	if v.row.Own == "" || name != v.row.Own {
		return "", false
	}
	viewName, parent := v.Inode.Parent()
	if parent == nil {
		return "", true // not in the tree any more: "" makes every operation ENOENT
	}
	p, ok := asNode(parent)
	if !ok {
		return "", true
	}
	dir := p.path()
	if dir == "" {
		return "", true
	}
	return dir + "/" + viewName + "/" + name, true
}

// ownFolder makes the store folder that holds the view's own file (rel), before the file is created through the
// view as name.
func (v *View) ownFolder(name, rel string) {
	if v.row.Own == "" || name != v.row.Own || v.tree.ReadOnly || rel == "" {
		return
	}
	_ = v.tree.mkdirOwned(v.id, rel[:strings.LastIndexByte(rel, '/')])
}

// childNode: the own file is an anchor at its own store path.
func (v *View) childNode(name, rel string, dir bool) storeNode {
	if v.row.Own != "" && name == v.row.Own {
		return &Node{base: rel}
	}
	return nil
}
