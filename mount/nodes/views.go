package nodes

import (
	"context"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/layout"
)

// The other agents' cwd-keyed folders (agents.Views, one table with Claude's rule) are shown as Claude's
// projects folder is: every name the agent could make from a cwd is a view of the canonical entry. Unlike
// Claude's, such a folder may hold entries of its own (Gemini's tmp/bin), so it stays a passthrough folder whose
// view names lead to the canonical entry. The nodes on the way carry their part in their role byte:
//
//	sessions/<id>/.gemini          roleAgent + i     (all.Agents[i])
//	  .gemini/tmp                  roleViews + j     (viewFolders[j]): its view names are views
//	    .gemini/tmp/<name>         roleOwnView + j   a view whose Own file is the name's own (Gemini's claim)
const (
	roleAgent   role = 16
	roleViews   role = 32
	roleOwnView role = 64
	roleEnd     role = 96
)

// viewFolder is one entry of the table as the nodes use it.
type viewFolder struct {
	agent *agents.Agent
	agents.Views
}

// viewFolders are the cwd-keyed folders of every agent but Claude (whose projects folder is the Projects node).
var viewFolders = func() []viewFolder {
	var out []viewFolder
	for _, a := range all.Agents {
		if a == claude.Agent {
			continue
		}
		for _, v := range a.Views {
			out = append(out, viewFolder{a, v})
		}
	}
	if len(out) > int(roleOwnView-roleViews) {
		panic("nodes: too many view folders for the role byte")
	}
	return out
}()

// childRole is the role of n's child name: the special folders of a session are found by name on the way down.
func (n *Node) childRole(name string) role {
	switch {
	case n.role == rolePlain:
		return rolePlain
	case n.role == roleSession && name == layout.ClaudeDir:
		return roleClaude
	case n.role == roleSession:
		for i, a := range all.Agents {
			if a.Dir == name && a != claude.Agent {
				return roleAgent + role(i)
			}
		}
	case n.role >= roleAgent && n.role < roleViews:
		a := all.Agents[n.role-roleAgent]
		for j, v := range viewFolders {
			if v.agent == a && v.Dir == name {
				return roleViews + role(j)
			}
		}
	}
	return rolePlain
}

// adopt gives a new child of n its role; a view's own file (Gemini's claim) is an anchor at its own store path.
func (n *Node) adopt(ch *Node, name, rel string) {
	if n.role == rolePlain {
		return
	}
	ch.role = n.childRole(name)
	if n.role >= roleOwnView && n.role < roleEnd && name == viewFolders[n.role-roleOwnView].Own {
		ch.base = rel
	}
}

// ownChild is the store path of name in a view when name is the view's own file: the file of that name in the
// store folder named like the view (created by ownFolder), not the canonical folder's.
func (n *Node) ownChild(name string) (string, bool) {
	if n.role < roleOwnView || n.role >= roleEnd || name != viewFolders[n.role-roleOwnView].Own {
		return "", false
	}
	view, parent := n.Inode.Parent()
	if parent == nil {
		return "", true // not in the tree any more: "" makes every operation ENOENT
	}
	p, ok := parent.Operations().(*Node)
	if !ok {
		return "", true
	}
	dir := p.path()
	if dir == "" {
		return "", true
	}
	return dir + "/" + view + "/" + name, true
}

// ownFolder makes the store folder that holds a view's own file (rel), before the file is created through the
// view as name.
func (n *Node) ownFolder(name, rel string) {
	if n.role < roleOwnView || n.role >= roleEnd || name != viewFolders[n.role-roleOwnView].Own || n.tree.ReadOnly || rel == "" {
		return
	}
	dir := rel[:strings.LastIndexByte(rel, '/')]
	_ = n.tree.atParent(dir, func(dirfd int, name string) error {
		err := unix.Mkdirat(dirfd, name, 0o755)
		if uid, gid := n.tree.sessionOwner(n.id); err == nil && isRoot && uid >= 0 {
			return unix.Fchownat(dirfd, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
		}
		return err
	})
}

// lookupView answers a lookup in an agent's cwd-keyed folder: a view name (other than the canonical one, which
// is the folder's own entry) leads to the canonical entry, as projects/ does for Claude. While there is no
// canonical entry, ok is false and the name is the folder's own entry (none, or a name's claim left behind):
// a lookup never makes the canonical entry, so rm -rf of the agent's folder does not bring it back while it
// removes the views. mkdir of a view name makes it (mkdirView). ok is false for every other lookup too.
func (n *Node) lookupView(ctx context.Context, name string, out *fuse.EntryOut) (ch *fs.Inode, errno syscall.Errno, ok bool) {
	if n.role < roleViews || n.role >= roleOwnView {
		return nil, 0, false
	}
	j := n.role - roleViews
	v := viewFolders[j]
	if name == v.Canonical || !v.Name(name) {
		return nil, 0, false
	}
	dir := n.path()
	if dir == "" {
		return nil, syscall.ENOENT, true
	}
	t := n.tree
	if _, done := t.viewsFolded.LoadOrStore(dir, struct{}{}); !done && !t.ReadOnly {
		// First view of this folder in this mount: what the agent filed under other names while the store was
		// not mounted joins the canonical entry, which every view would otherwise hide.
		_, _ = t.Store.FoldViews(n.id, v.agent.Dir+"/"+v.Dir, v.Canonical, v.Name, v.Own)
	}
	target := dir + "/" + v.Canonical
	var st syscall.Stat_t
	gen, err := t.lstatAt(target, &st)
	if err == syscall.ENOENT {
		return nil, 0, false
	}
	if err != nil {
		return nil, fs.ToErrno(err), true
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return nil, syscall.ENOTDIR, true // never shown as the agent's folder
	}
	view := t.aliasNum(v.agent.Name + "/" + name)
	attr := t.stableAttr(&st, gen, view)
	if ch = known(&n.Inode, name, attr); ch == nil {
		node := &Node{tree: t, base: target, id: n.id, alias: view}
		if v.Own != "" {
			node.role = roleOwnView + j
		}
		t.nodeMade()
		ch = n.NewInode(ctx, node, attr)
		node.show(target)
	}
	out.Attr.FromStat(&st)
	out.Attr.Ino = ch.StableAttr().Ino
	told(ch, &out.Attr)
	return ch, 0, true
}

// mkdirView answers mkdir of a view name in an agent's cwd-keyed folder (the agent's first run in a cwd): the
// canonical entry is made, and the name is its view. ok is false for other names.
func (n *Node) mkdirView(ctx context.Context, name string, out *fuse.EntryOut) (ch *fs.Inode, errno syscall.Errno, ok bool) {
	if n.role < roleViews || n.role >= roleOwnView || n.tree.ReadOnly {
		return nil, 0, false
	}
	v := viewFolders[n.role-roleViews]
	if name == v.Canonical || !v.Name(name) {
		return nil, 0, false
	}
	dir := n.path()
	if dir == "" {
		return nil, syscall.ENOENT, true
	}
	t := n.tree
	err := t.atParent(dir+"/"+v.Canonical, func(dirfd int, name string) error {
		err := unix.Mkdirat(dirfd, name, 0o755)
		if uid, gid := t.sessionOwner(n.id); err == nil && isRoot && uid >= 0 {
			return unix.Fchownat(dirfd, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
		}
		return err
	})
	if err != nil && err != syscall.EEXIST {
		return nil, fs.ToErrno(err), true
	}
	if ch, errno, ok = n.lookupView(ctx, name, out); !ok {
		return nil, syscall.ENOENT, true // the canonical entry went again at once
	}
	return ch, errno, true
}

// removeView answers rmdir (or unlink) of a view name in an agent's cwd-keyed folder: the name's own folder (its
// claim, if any) goes and the canonical entry stays, as rmdir of an alias of .claude/projects forgets it. rmdir of
// the canonical entry takes the views' claims with it (every view was that entry), since a view met after it can
// no longer be opened and rm -rf skips it. So rm -rf of an agent's folder works whatever order it meets the names
// in. ok is false for other names.
func (n *Node) removeView(name string, rmdir bool) (errno syscall.Errno, ok bool) {
	if n.role < roleViews || n.role >= roleOwnView {
		return 0, false
	}
	v := viewFolders[n.role-roleViews]
	if name == v.Canonical && rmdir && v.Own != "" {
		return n.removeCanonical(name, v), true
	}
	if name == v.Canonical || !v.Name(name) {
		return 0, false
	}
	own := n.child(name)
	if own == "" {
		return syscall.ENOENT, true
	}
	n.did(own)
	if v.Own != "" {
		n.did(own + "/" + v.Own)
		_ = n.tree.atParent(own+"/"+v.Own, func(dirfd int, name string) error { return unix.Unlinkat(dirfd, name, 0) })
	}
	err := n.tree.atParent(own, func(dirfd int, name string) error { return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR) })
	if err == syscall.ENOENT {
		err = nil // a view with no claim of its own: nothing to remove
	}
	return fs.ToErrno(err), true
}

// removeCanonical removes the (empty) canonical entry, then every view name's folder in the store that holds
// nothing but its claim.
func (n *Node) removeCanonical(name string, v viewFolder) syscall.Errno {
	p := n.child(name)
	n.did(p)
	err := n.tree.atParent(p, func(dirfd int, name string) error { return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR) })
	if err != nil {
		return fs.ToErrno(err)
	}
	dir := n.path()
	ents, err := n.tree.sessions.ReadDir(dir)
	if err != nil {
		return 0
	}
	for _, e := range ents {
		if !e.IsDir() || e.Name() == v.Canonical || !v.Name(e.Name()) {
			continue
		}
		own := dir + "/" + e.Name()
		if in, err := n.tree.sessions.ReadDir(own); err != nil || len(in) != 1 || in[0].Name() != v.Own {
			continue // not only a claim: left to the agent's own rm
		}
		_ = n.tree.sessions.Remove(own + "/" + v.Own)
		_ = n.tree.sessions.Remove(own)
	}
	return 0
}
