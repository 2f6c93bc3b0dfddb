package nodes

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/sessionfs/sessionfs/agents"
)

// AgentDir is an agent's folder in a session (sessions/<id>/.claude, .gemini, .qwen, .codex, .opencode), passed
// through to the store. Its cwd-keyed folders, the agent's rows of the views table (views.go), are views folders:
// an OnlyViewsDir for a row whose folder holds nothing but views (Claude's projects/), a ViewsDir otherwise.
type AgentDir struct {
	Node
	agent *agents.Agent
}

var (
	_ = (fs.NodeLookuper)((*AgentDir)(nil))
	_ = (parentKind)((*AgentDir)(nil))
)

func (d *AgentDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	d.tree.noteUse(ctx, d.id)
	if r := rowOf(d.agent, name); r != nil && r.Only {
		if ch, errno, ok := d.lookupOnlyViews(ctx, r, name, out); ok {
			return ch, errno
		}
	}
	return d.lookupStore(ctx, name, out)
}

// lookupOnlyViews answers the lookup of the folder of row r, which holds nothing but views, with a new
// OnlyViewsDir, watched as the store folder it shows. It is folded when the kernel did not hold it (first sight of
// it in this mount, or after the kernel forgot it). ok is false when the store's entry is not a folder: a plain node then.
func (d *AgentDir) lookupOnlyViews(ctx context.Context, r *viewsRow, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno, bool) {
	p := d.child(name)
	var st syscall.Stat_t
	gen, err := d.tree.lstatAt(p, &st)
	if err != nil {
		return nil, fs.ToErrno(err), true
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return nil, 0, false
	}
	if d.GetChild(name) == nil {
		d.tree.fold(d.id, r)
	}
	attr := d.tree.stableAttr(&st, gen, 0)
	ch := existingChild(&d.Inode, name, attr)
	if ch == nil {
		ch = d.NewInode(ctx, &OnlyViewsDir{tree: d.tree, id: d.id, dir: p, views: r}, attr)
		d.tree.watchFolder(p, ch) // its listing (the canonical folder, or none) follows the store's folder
	}
	d.entry(out, &st, ch)
	return ch, 0, true
}

// childNode: a folder of the agent's rows with entries of its own is a ViewsDir. A folder of views only is made
// by Lookup alone: one made here (mkdir) is a plain folder until the kernel looks it up again.
func (d *AgentDir) childNode(name, rel string, dir bool) storeNode {
	if r := rowOf(d.agent, name); r != nil && !r.Only && dir {
		return &ViewsDir{views: r}
	}
	return nil
}
