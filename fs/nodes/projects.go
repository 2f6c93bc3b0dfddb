package nodes

import (
	"context"
	"path/filepath"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/sessionfs/sessionfs/claude"
	"github.com/sessionfs/sessionfs/layout"
)

// Projects is a session's .claude/projects. Every name Claude Code could make from a cwd is a view of the
// session's one transcript folder, so "claude --resume" finds a conversation whatever cwd it starts in.
type Projects struct {
	fs.Inode
	tree *Tree
	id   string
	dir  string // the store's projects folder
}

var (
	_ = (fs.NodeLookuper)((*Projects)(nil))
	_ = (fs.NodeGetattrer)((*Projects)(nil))
	_ = (fs.NodeReaddirer)((*Projects)(nil))
	_ = (fs.NodeMkdirer)((*Projects)(nil))
	_ = (fs.NodeRmdirer)((*Projects)(nil))
)

// AliasTarget is the alias rule: the store folder that projects/<name> shows, and the view number its folders'
// inode numbers carry; ok is false for a name Claude Code could never make, which does not exist.
func (t *Tree) AliasTarget(projectsDir, name string) (target string, view uint64, ok bool) {
	if !claude.IsFolderName(name) {
		return "", 0, false
	}
	return filepath.Join(projectsDir, layout.CanonicalProject), t.aliasNum(name), true
}

func (p *Projects) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	target, view, ok := p.tree.AliasTarget(p.dir, name)
	if !ok {
		return nil, syscall.ENOENT
	}
	var st syscall.Stat_t
	gen, err := lstat(target, &st)
	if err == syscall.ENOENT {
		// The canonical folder was removed (rm -rf of .claude's content, say): make it again, since every
		// name of the folder leads there.
		if err = syscall.Mkdir(target, 0o755); err == nil || err == syscall.EEXIST {
			gen, err = lstat(target, &st)
		}
	}
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	p.tree.used(p.id, name)
	n := &Node{tree: p.tree, base: target, id: p.id, alias: view, transcripts: true}
	ch := p.NewInode(ctx, n, stableAttr(&st, gen, view))
	if ch.Operations() == n {
		n.show(target)
	}
	out.Attr.FromStat(&st)
	out.Attr.Ino = ch.StableAttr().Ino
	return ch, 0
}

func (p *Projects) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	var st syscall.Stat_t
	if _, err := lstat(p.dir, &st); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStat(&st)
	out.Ino = p.StableAttr().Ino
	return 0
}

// Readdir lists the canonical folder and the aliases the session has used (from session.json).
func (p *Projects) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	names := []string{layout.CanonicalProject}
	if m, err := p.tree.Store.Get(p.id); err == nil {
		names = append(names, m.Aliases...)
	}
	var canon syscall.Stat_t
	if _, err := lstat(filepath.Join(p.dir, layout.CanonicalProject), &canon); err != nil {
		return fs.NewListDirStream(nil), 0
	}
	ents := make([]fuse.DirEntry, 0, len(names))
	for _, name := range names {
		if _, view, ok := p.tree.AliasTarget(p.dir, name); ok {
			ents = append(ents, fuse.DirEntry{Name: name, Mode: syscall.S_IFDIR, Ino: stableAttr(&canon, 0, view).Ino})
		}
	}
	return fs.NewListDirStream(ents), 0
}

// Mkdir is reached only for names Lookup refused: every valid name already exists.
func (p *Projects) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EINVAL
}

// Rmdir of an alias forgets it (the transcripts stay in the canonical folder); of the canonical folder, removes
// it when empty.
func (p *Projects) Rmdir(ctx context.Context, name string) syscall.Errno {
	if name == layout.CanonicalProject {
		return fs.ToErrno(syscall.Rmdir(filepath.Join(p.dir, name)))
	}
	if !claude.IsFolderName(name) {
		return syscall.ENOENT
	}
	p.tree.forget(p.id, name)
	return 0
}
