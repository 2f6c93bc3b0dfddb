package nodes

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// role marks the few passthrough folders whose children are special.
type role uint8

const (
	rolePlain   role = iota
	roleSession      // sessions/<id>: its .claude child has the projects folder
	roleClaude       // sessions/<id>/.claude: its projects child aliases transcript folders
)

// Node passes a file or folder of a session through to the store. A node with a base is an anchor: its store path
// is base. Every other node's store path is its nearest anchor's base plus the names on the way down, so renames
// (which go-fuse applies to the tree) need no bookkeeping, and a file seen through any alias view resolves to the
// same store file.
type Node struct {
	fs.Inode
	tree  *Tree
	base  string // store path of an anchor; empty for other nodes
	id    string // the session this node belongs to
	alias uint64 // view number mixed into folder inode numbers below an alias view; 0 elsewhere
	role  role
	shown string // the store folder this node is registered as showing (folders only), for OnForget
	// transcripts: the node is in an alias view of the transcript folder, where unlink moves to the trash.
	transcripts bool
}

var (
	_ = (fs.NodeStatfser)((*Node)(nil))
	_ = (fs.NodeLookuper)((*Node)(nil))
	_ = (fs.NodeGetattrer)((*Node)(nil))
	_ = (fs.NodeSetattrer)((*Node)(nil))
	_ = (fs.NodeOpener)((*Node)(nil))
	_ = (fs.NodeCreater)((*Node)(nil))
	_ = (fs.NodeMkdirer)((*Node)(nil))
	_ = (fs.NodeMknoder)((*Node)(nil))
	_ = (fs.NodeUnlinker)((*Node)(nil))
	_ = (fs.NodeRmdirer)((*Node)(nil))
	_ = (fs.NodeRenamer)((*Node)(nil))
	_ = (fs.NodeSymlinker)((*Node)(nil))
	_ = (fs.NodeLinker)((*Node)(nil))
	_ = (fs.NodeReadlinker)((*Node)(nil))
	_ = (fs.NodeOpendirHandler)((*Node)(nil))
	_ = (fs.NodeGetxattrer)((*Node)(nil))
	_ = (fs.NodeSetxattrer)((*Node)(nil))
	_ = (fs.NodeRemovexattrer)((*Node)(nil))
	_ = (fs.NodeListxattrer)((*Node)(nil))
	_ = (fs.NodeFlusher)((*Node)(nil))
	_ = (fs.NodeOnForgetter)((*Node)(nil))
)

// path is the node's path in the store, or "" for a node no longer in the tree (unlinked), which makes path
// operations fail with ENOENT.
func (n *Node) path() string {
	if n.base != "" {
		return n.base
	}
	var names []string
	in := &n.Inode
	for {
		name, parent := in.Parent()
		if parent == nil {
			return ""
		}
		names = append(names, name)
		if a, ok := parent.Operations().(*Node); ok && a.base != "" {
			slices.Reverse(names)
			return filepath.Join(append([]string{a.base}, names...)...)
		}
		if _, ok := parent.Operations().(*Node); !ok {
			return "" // reached a synthetic folder without an anchor: not a store path
		}
		in = parent
	}
}

func (n *Node) child(name string) string { return filepath.Join(n.path(), name) }

// newChild makes the inode for store file p, just looked up or created under n as name.
func (n *Node) newChild(ctx context.Context, name, p string, st *syscall.Stat_t, gen uint64) *fs.Inode {
	ch := &Node{tree: n.tree, id: n.id, alias: n.alias, transcripts: n.transcripts}
	if n.role == roleSession && name == ".claude" {
		ch.role = roleClaude
	}
	in := n.NewInode(ctx, ch, stableAttr(st, gen, n.alias))
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR && in.Operations() == ch {
		ch.show(p)
	}
	return in
}

// show registers a folder node as a kernel-cached view of store folder p.
func (n *Node) show(p string) {
	n.shown = p
	n.tree.showing(p, &n.Inode)
}

func (n *Node) OnForget() {
	if n.shown != "" {
		n.tree.hidden(n.shown, &n.Inode)
	}
}

// did records that n changed its child at store path p itself, so the store watcher does not invalidate it.
func (n *Node) did(p string) { n.tree.did(p, &n.Inode) }

func (n *Node) entry(out *fuse.EntryOut, st *syscall.Stat_t, ch *fs.Inode) {
	out.Attr.FromStat(st)
	out.Attr.Ino = ch.StableAttr().Ino
}

// Lookup finds name in the store; in a session's .claude, "projects" is the folder of alias views.
func (n *Node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	p := n.child(name)
	var st syscall.Stat_t
	gen, err := lstat(p, &st)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	if n.role == roleClaude && name == "projects" && st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		if n.GetChild(name) == nil {
			n.tree.fold(n.id) // first sight of this session's projects in this mount
		}
		pr := &Projects{tree: n.tree, id: n.id, dir: p}
		ch := n.NewInode(ctx, pr, stableAttr(&st, gen, 0))
		n.entry(out, &st, ch)
		return ch, 0
	}
	ch := n.newChild(ctx, name, p, &st, gen)
	n.entry(out, &st, ch)
	return ch, 0
}

func (n *Node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	var s syscall.Statfs_t
	if err := syscall.Statfs(n.tree.Store.Root, &s); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStatfsT(&s)
	return 0
}

func (n *Node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if fga, ok := f.(fs.FileGetattrer); ok && f != nil {
		errno := fga.Getattr(ctx, out)
		out.Ino = n.StableAttr().Ino
		return errno
	}
	var st syscall.Stat_t
	if _, err := lstat(n.path(), &st); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStat(&st)
	out.Ino = n.StableAttr().Ino
	return 0
}

func (n *Node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	p := n.path()
	n.tree.did(p, nil)
	if fsa, ok := f.(fs.FileSetattrer); ok && f != nil {
		if errno := fsa.Setattr(ctx, in, out); errno != 0 {
			return errno
		}
		return n.Getattr(ctx, f, out)
	}
	if m, ok := in.GetMode(); ok {
		if err := syscall.Chmod(p, m); err != nil {
			return fs.ToErrno(err)
		}
	}
	uid, uok := in.GetUID()
	gid, gok := in.GetGID()
	if uok || gok {
		su, sg := -1, -1
		if uok {
			su = int(uid)
		}
		if gok {
			sg = int(gid)
		}
		if err := unix.Fchownat(unix.AT_FDCWD, p, su, sg, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fs.ToErrno(err)
		}
	}
	// Truncate before times, so an explicit mtime is not clobbered by the truncate.
	if sz, ok := in.GetSize(); ok {
		if err := syscall.Truncate(p, int64(sz)); err != nil {
			return fs.ToErrno(err)
		}
		if in.Valid&fuse.FATTR_KILL_SUIDGID != 0 {
			if fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0); err == nil {
				killPriv(ctx, fd)
				syscall.Close(fd)
			}
		}
	}
	mtime, mok := in.GetMTime()
	atime, aok := in.GetATime()
	if mok || aok {
		ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
		if aok {
			ts[0] = unix.NsecToTimespec(atime.UnixNano())
		}
		if mok {
			ts[1] = unix.NsecToTimespec(mtime.UnixNano())
		}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fs.ToErrno(err)
		}
	}
	return n.Getattr(ctx, nil, out)
}

// Open opens the store file; go-fuse hands its descriptor to the kernel for FUSE passthrough, so reads and
// writes do not cross the daemon. O_APPEND is dropped because the kernel computes append offsets itself.
func (n *Node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	flags &^= syscall.O_APPEND | fuse.FMODE_EXEC
	p := n.path()
	fd, err := syscall.Open(p, int(flags)|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0, fs.ToErrno(err)
	}
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		killPriv(ctx, fd)
		return n.tree.writer(p, fd), 0, 0
	}
	return fs.NewLoopbackFile(fd), 0, 0
}

// Flush answers ENOSYS, which tells the kernel never to send FLUSH again: close(2) then costs no round trip.
// There is nothing to flush: writes go to the store file through passthrough, and no locks are kept here.
func (n *Node) Flush(ctx context.Context, f fs.FileHandle) syscall.Errno { return syscall.ENOSYS }

// killPriv clears set-user-ID and set-group-ID when an unprivileged caller opens a file for writing. The mount
// negotiates HANDLE_KILLPRIV_V2 (so the kernel does not ask for security.capability before every write), which
// makes this our job; passthrough writes never reach us, so it is done at open, before any write.
func killPriv(ctx context.Context, fd int) {
	caller, ok := fuse.FromContext(ctx)
	if !ok || caller.Uid == 0 {
		return
	}
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil {
		return
	}
	mode := st.Mode &^ syscall.S_IFMT
	clear := uint32(syscall.S_ISUID)
	if mode&syscall.S_IXGRP != 0 {
		clear |= syscall.S_ISGID // without group-exec, S_ISGID means mandatory locking: kept, as the kernel does
	}
	if mode&clear != 0 {
		_ = syscall.Fchmod(fd, mode&^clear)
	}
}

func (n *Node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	p := n.child(name)
	flags &^= syscall.O_APPEND
	n.did(p)
	fd, err := syscall.Open(p, int(flags)|syscall.O_CREAT|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, mode)
	if err != nil {
		return nil, nil, 0, fs.ToErrno(err)
	}
	preserveOwner(ctx, p)
	var st syscall.Stat_t
	gen, err := fstat(fd, &st)
	if err != nil {
		syscall.Close(fd)
		return nil, nil, 0, fs.ToErrno(err)
	}
	ch := n.newChild(ctx, name, p, &st, gen)
	n.entry(out, &st, ch)
	return ch, n.tree.writer(p, fd), 0, 0
}

// made finishes the creation of name at p (a folder, node or link): owner, attributes, inode. On failure it
// removes what was made with undo.
func (n *Node) made(ctx context.Context, name, p string, undo func(string) error, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	preserveOwner(ctx, p)
	var st syscall.Stat_t
	gen, err := lstat(p, &st)
	if err != nil {
		undo(p)
		return nil, fs.ToErrno(err)
	}
	ch := n.newChild(ctx, name, p, &st, gen)
	n.entry(out, &st, ch)
	return ch, 0
}

func (n *Node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	p := n.child(name)
	n.did(p)
	if err := syscall.Mkdir(p, mode); err != nil {
		return nil, fs.ToErrno(err)
	}
	return n.made(ctx, name, p, syscall.Rmdir, out)
}

func (n *Node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	p := n.child(name)
	n.did(p)
	if err := syscall.Mknod(p, mode, int(rdev)); err != nil {
		return nil, fs.ToErrno(err)
	}
	return n.made(ctx, name, p, syscall.Unlink, out)
}

func (n *Node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	p := n.child(name)
	n.did(p)
	if err := syscall.Symlink(target, p); err != nil {
		return nil, fs.ToErrno(err)
	}
	return n.made(ctx, name, p, syscall.Unlink, out)
}

func (n *Node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	t, ok := target.(*Node)
	if !ok {
		return nil, syscall.EXDEV
	}
	src := t.path()
	if src == "" {
		return nil, syscall.ENOENT
	}
	p := n.child(name)
	n.did(p)
	if err := syscall.Link(src, p); err != nil {
		return nil, fs.ToErrno(err)
	}
	return n.made(ctx, name, p, syscall.Unlink, out)
}

func (n *Node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		sz, err := syscall.Readlink(n.path(), buf)
		if err != nil {
			return nil, fs.ToErrno(err)
		}
		if sz < len(buf) {
			return buf[:sz], 0
		}
	}
}

// Unlink removes a file; in the transcript folder it moves it to the session's transcript trash instead, since
// Claude Code ages transcripts out at start-up and people rm the wrong thing.
func (n *Node) Unlink(ctx context.Context, name string) syscall.Errno {
	p := n.child(name)
	n.did(p)
	if n.transcripts {
		return n.tree.trashTranscript(n.id, p)
	}
	return fs.ToErrno(syscall.Unlink(p))
}

func (n *Node) Rmdir(ctx context.Context, name string) syscall.Errno {
	p := n.child(name)
	n.did(p)
	return fs.ToErrno(syscall.Rmdir(p))
}

// Rename moves within the mount's store; a rename onto a synthetic folder (the sessions folder, say) is EXDEV,
// which makes mv fall back to copying.
func (n *Node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*Node)
	if !ok {
		return syscall.EXDEV
	}
	src, dst := n.child(name), np.child(newName)
	n.did(src)
	np.did(dst)
	return fs.ToErrno(unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, uint(flags)))
}

// OpendirHandle lets the kernel keep the listing: it rereads it when the folder's mtime changes (auto
// invalidation), which a change through the mount or a store event (the watcher invalidates the folder's
// attributes) always brings.
func (n *Node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	ds, errno := fs.NewLoopbackDirStream(n.path())
	if errno != 0 {
		return nil, 0, errno
	}
	return ds, fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, 0
}

func (n *Node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	sz, err := unix.Lgetxattr(n.path(), attr, dest)
	return uint32(sz), fs.ToErrno(err)
}

func (n *Node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return fs.ToErrno(unix.Lsetxattr(n.path(), attr, data, int(flags)))
}

func (n *Node) Removexattr(ctx context.Context, attr string) syscall.Errno {
	return fs.ToErrno(unix.Lremovexattr(n.path(), attr))
}

func (n *Node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	sz, err := unix.Llistxattr(n.path(), dest)
	return uint32(sz), fs.ToErrno(err)
}

// preserveOwner gives a file made by the root daemon to the caller, as the kernel would have.
func preserveOwner(ctx context.Context, path string) {
	if os.Getuid() != 0 {
		return
	}
	if caller, ok := fuse.FromContext(ctx); ok {
		_ = syscall.Lchown(path, int(caller.Uid), int(caller.Gid))
	}
}
