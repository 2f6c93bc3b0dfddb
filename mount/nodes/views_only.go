package nodes

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// OnlyViewsDir is the folder of a row of the views table (views.go) that holds nothing but views (agents.Views.Only:
// Claude's .claude/projects). Every name of the row is a view of the canonical folder, the canonical name too (view
// number 0), so "claude --resume" finds a conversation whatever cwd it starts in; any other name does not exist.
// Unlike a ViewsDir it is synthetic, not the store folder passed through: its listing is the canonical name alone,
// nothing else can be made in it, and the canonical folder is made again when a view is looked up without it. The
// watcher follows the store's folder: the canonical folder made or removed behind the mount drops the listing the
// kernel keeps.
//
// Every other name answers a lookup and is never listed: Claude Code looks up its cwd's name (--resume and
// --continue of every version, the folders of a repository's worktrees) and lists projects/ only to gather every
// conversation (a newer CLI's --resume, the picker, the start-up cleanup), which the canonical folder holds. So a
// walker (tar, cp -a, rsync, grep -r, find, du) meets each transcript once, as the store holds it, and a copy made
// through the mount is the store's. The aliases a session used are in its session.json (aliases.go) for ls/show.
type OnlyViewsDir struct {
	fs.Inode
	tree  *Tree
	id    string
	dir   string // the store's folder, relative to the sessions folder
	views *viewsRow
	listed
}

var (
	_ = (fs.NodeLookuper)((*OnlyViewsDir)(nil))
	_ = (fs.NodeGetattrer)((*OnlyViewsDir)(nil))
	_ = (fs.NodeSetattrer)((*OnlyViewsDir)(nil))
	_ = (fs.NodeReaddirer)((*OnlyViewsDir)(nil))
	_ = (fs.NodeMkdirer)((*OnlyViewsDir)(nil))
	_ = (fs.NodeRmdirer)((*OnlyViewsDir)(nil))
	_ = (fs.NodeStatfser)((*OnlyViewsDir)(nil))
	_ = (fs.NodeOnForgetter)((*OnlyViewsDir)(nil))
)

// OnForget drops the folder's watch (lookupOnlyViews made it).
func (d *OnlyViewsDir) OnForget() { d.tree.unwatchFolder(d.dir, &d.Inode) }

func (d *OnlyViewsDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	v, ok := d.tree.viewOf(d.views, d.dir, name)
	if !ok {
		return nil, syscall.ENOENT
	}
	var st syscall.Stat_t
	gen, err := d.tree.lstatAt(v.target, &st)
	if err == syscall.ENOENT && !d.tree.ReadOnly {
		// The canonical folder was removed (rm -rf of .claude's content, say): make it again, since every
		// name of the folder leads there. It belongs to the session's owner, as the rest of the session.
		err = d.tree.mkdirOwned(d.id, v.target)
		if err == nil || err == syscall.EEXIST {
			gen, err = d.tree.lstatAt(v.target, &st)
		}
	}
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return nil, syscall.ENOTDIR // a session made it something else: never shown as the canonical folder
	}
	return d.tree.viewInode(ctx, &d.Inode, d.id, v, &st, gen, out), 0
}

// Getattr is the store folder's, its mtime too, so a copy through the mount keeps the store's time. The listing is
// the folder's one entry, whose making and removal change that mtime, on which the kernel rereads a listing it
// kept: the attributes are not kept (no watcher follows the folder), and the first listing's end tells the kernel
// to forget the attributes the lookup gave (uncached).
func (d *OnlyViewsDir) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	var st syscall.Stat_t
	if _, err := d.tree.lstatAt(d.dir, &st); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStat(&st)
	out.Ino = d.StableAttr().Ino
	out.SetTimeout(0)
	return 0
}

// Setattr changes the store's folder (touch, chmod), as for any folder.
func (d *OnlyViewsDir) Setattr(ctx context.Context, _ fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if errno := d.tree.setattr(ctx, d.dir, in); errno != 0 {
		return errno
	}
	return d.Getattr(ctx, nil, out)
}

func (d *OnlyViewsDir) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return d.tree.statfs(out)
}

// Readdir lists the canonical folder alone: the one entry of the store's folder (what was filed under other names is
// folded into it), each transcript once.
func (d *OnlyViewsDir) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	var canon syscall.Stat_t
	if _, err := d.tree.lstatAt(d.dir+"/"+d.views.Canonical, &canon); err != nil || canon.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return &uncached{fs.NewListDirStream(nil), &d.Inode, &d.listed}, 0
	}
	ents := []fuse.DirEntry{{Name: d.views.Canonical, Mode: syscall.S_IFDIR, Ino: d.tree.stableAttr(&canon, 0, 0).Ino}}
	return &uncached{fs.NewListDirStream(ents), &d.Inode, &d.listed}, 0
}

// Mkdir is reached only for names Lookup refused: every valid name already exists.
func (d *OnlyViewsDir) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EINVAL
}

// Rmdir of a view forgets its alias (the files stay in the canonical folder); of the canonical folder, removes it
// when empty.
func (d *OnlyViewsDir) Rmdir(ctx context.Context, name string) syscall.Errno {
	if name == d.views.Canonical {
		return fs.ToErrno(d.tree.atParent(d.dir+"/"+name, func(dirfd int, name string) error {
			return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
		}))
	}
	if !d.views.isView(name) {
		return syscall.ENOENT
	}
	if d.views.transcripts && !d.tree.ReadOnly {
		d.tree.forgetAlias(d.id, name)
	}
	return 0
}
