package nodes

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/layout"
)

// Projects is a session's .claude/projects. Every name Claude Code could make from a cwd is a view of the
// session's one transcript folder, so "claude --resume" finds a conversation whatever cwd it starts in.
type Projects struct {
	fs.Inode
	tree *Tree
	id   string
	dir  string // the store's projects folder, relative to the sessions folder
	listed
}

var (
	_ = (fs.NodeLookuper)((*Projects)(nil))
	_ = (fs.NodeGetattrer)((*Projects)(nil))
	_ = (fs.NodeSetattrer)((*Projects)(nil))
	_ = (fs.NodeReaddirer)((*Projects)(nil))
	_ = (fs.NodeMkdirer)((*Projects)(nil))
	_ = (fs.NodeRmdirer)((*Projects)(nil))
	_ = (fs.NodeStatfser)((*Projects)(nil))
)

// AliasTarget is the alias rule (Claude's row of the agents' table, claude.Agent.Views): the store folder that
// projects/<name> shows, and the view number its folders' inode numbers carry; ok is false for a name Claude Code
// could never make, which does not exist.
func (t *Tree) AliasTarget(projectsDir, name string) (target string, view uint64, ok bool) {
	if !claudeViews.Name(name) {
		return "", 0, false
	}
	return projectsDir + "/" + claudeViews.Canonical, t.aliasNum(name), true
}

// claudeViews is Claude's rule: every name of its alphabet is a view of the canonical folder, nothing else exists.
var claudeViews = claude.Agent.Views[0]

func (p *Projects) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	target, view, ok := p.tree.AliasTarget(p.dir, name)
	if !ok {
		return nil, syscall.ENOENT
	}
	var st syscall.Stat_t
	gen, err := p.tree.lstatAt(target, &st)
	if err == syscall.ENOENT && !p.tree.ReadOnly {
		// The canonical folder was removed (rm -rf of .claude's content, say): make it again, since every
		// name of the folder leads there. It belongs to the session's owner, as the rest of the session.
		err = p.tree.atParent(target, func(dirfd int, name string) error {
			if err := unix.Mkdirat(dirfd, name, 0o755); err != nil {
				return err
			}
			if uid, gid := p.tree.sessionOwner(p.id); isRoot && uid >= 0 {
				return unix.Fchownat(dirfd, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
			}
			return nil
		})
		if err == nil || err == syscall.EEXIST {
			gen, err = p.tree.lstatAt(target, &st)
		}
	}
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return nil, syscall.ENOTDIR // a session made it something else: never shown as the transcript folder
	}
	attr := p.tree.stableAttr(&st, gen, view)
	ch := known(&p.Inode, name, attr)
	if ch == nil {
		n := &Node{tree: p.tree, base: target, id: p.id, alias: view, transcripts: true}
		p.tree.nodeMade()
		ch = p.NewInode(ctx, n, attr)
		n.show(target)
	}
	out.Attr.FromStat(&st)
	out.Attr.Ino = ch.StableAttr().Ino
	told(ch, &out.Attr)
	return ch, 0
}

func (p *Projects) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	var st syscall.Stat_t
	if _, err := p.tree.lstatAt(p.dir, &st); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStat(&st)
	out.Ino = p.StableAttr().Ino
	p.mtime(&out.Attr)
	return 0
}

// Setattr changes the store's projects folder (touch, chmod), as for any folder.
func (p *Projects) Setattr(ctx context.Context, _ fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if errno := p.tree.setattr(ctx, p.dir, in); errno != 0 {
		return errno
	}
	return p.tree.setattrDone(out, p.Getattr(ctx, nil, out))
}

func (p *Projects) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return p.tree.statfs(out)
}

// Readdir lists the canonical folder and the aliases the session has used (from session.json).
func (p *Projects) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	names := []string{layout.CanonicalProject}
	if m, err := p.tree.Store.Get(p.id); err == nil {
		names = append(names, m.Aliases...)
	}
	var canon syscall.Stat_t
	if _, err := p.tree.lstatAt(p.dir+"/"+layout.CanonicalProject, &canon); err != nil || canon.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return &uncached{fs.NewListDirStream(nil), &p.Inode, &p.listed}, 0
	}
	ents := make([]fuse.DirEntry, 0, len(names))
	for _, name := range names {
		if _, view, ok := p.tree.AliasTarget(p.dir, name); ok {
			ents = append(ents, fuse.DirEntry{Name: name, Mode: syscall.S_IFDIR, Ino: p.tree.stableAttr(&canon, 0, view).Ino})
		}
	}
	return &uncached{fs.NewListDirStream(ents), &p.Inode, &p.listed}, 0
}

// Mkdir is reached only for names Lookup refused: every valid name already exists.
func (p *Projects) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EINVAL
}

// Rmdir of an alias forgets it (the transcripts stay in the canonical folder); of the canonical folder, removes
// it when empty.
func (p *Projects) Rmdir(ctx context.Context, name string) syscall.Errno {
	if name == layout.CanonicalProject {
		return fs.ToErrno(p.tree.atParent(p.dir+"/"+name, func(dirfd int, name string) error {
			return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
		}))
	}
	if !claudeViews.Name(name) {
		return syscall.ENOENT
	}
	if !p.tree.ReadOnly {
		p.tree.forget(p.id, name)
	}
	return 0
}
