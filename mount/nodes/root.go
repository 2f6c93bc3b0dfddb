package nodes

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Root is the top of a mount: sessions/, by-claude-id/ to find a session by one of its conversations, and
// conversations/, every conversation as text (text.go).
type Root struct {
	fs.Inode
	tree     *Tree
	sessions *Sessions
}

var (
	_ = (fs.NodeOnAdder)((*Root)(nil))
	_ = (fs.NodeGetattrer)((*Root)(nil))
	_ = (fs.NodeStatfser)((*Root)(nil))
)

// Sessions is the sessions/ folder's inode (for Tree.Prune).
func (r *Root) Sessions() *fs.Inode { return &r.sessions.Inode }

// NewRoot returns the root node of a mount of tree's store.
func NewRoot(tree *Tree) *Root {
	return &Root{tree: tree, sessions: &Sessions{tree: tree}}
}

func (r *Root) OnAdd(ctx context.Context) {
	var st syscall.Stat_t
	gen, _ := fstat(r.tree.sessions.Fd(), &st)
	r.AddChild("sessions", r.NewPersistentInode(ctx, r.sessions, stableAttr(&st, gen, 0)), false)
	r.tree.watchFolder(".", &r.sessions.Inode)
	r.AddChild("by-claude-id", r.NewPersistentInode(ctx, &ByClaudeID{tree: r.tree}, fs.StableAttr{Mode: syscall.S_IFDIR}), false)
	r.AddChild(TextDir, r.NewPersistentInode(ctx, &TextRoot{tree: r.tree, texts: newTextCache()}, fs.StableAttr{Mode: syscall.S_IFDIR}), false)
	if r.tree.IndexWatch != nil {
		r.AddChild(IndexFile, r.NewPersistentInode(ctx, &indexNode{tree: r.tree}, fs.StableAttr{Mode: syscall.S_IFREG}), false)
	}
}

func (r *Root) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	var st syscall.Stat_t
	if _, err := lstat(r.tree.Store.Root, &st); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStat(&st)
	out.Mode = syscall.S_IFDIR | 0o755
	return 0
}

func (r *Root) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return r.sessions.Statfs(ctx, out)
}
