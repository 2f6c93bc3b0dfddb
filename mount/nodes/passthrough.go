package nodes

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/bind"
)

// Node passes a file or folder of a session through to the store: every file and folder of sessions/<id> but the
// few folders of a kind of their own, which embed it (SessionDir, AgentDir, ViewsDir, View). A node with a base is
// an anchor: its store path is base. Every other node's store path is its nearest anchor's base plus the names on
// the way down, so renames (which go-fuse applies to the tree) need no bookkeeping, and a file seen through any
// view resolves to the same store file.
type Node struct {
	fs.Inode
	tree *Tree
	base string // path of an anchor, relative to the sessions folder; empty for other nodes
	id   string // the session this node belongs to
	// Below a view (view.go): the row of the views table it is seen through, and the view's number, mixed into
	// folders' inode numbers. nil and 0 elsewhere; 0 also below the canonical name of a folder of views only.
	row   *viewsRow
	alias uint64
	// watched is the store folder (relative) this node is registered with the watcher as showing (folders
	// only), for OnForget.
	watched string
	// bound: the node is a session's folder the mount binds (bind.MountDirs) or beneath one. What the kernel
	// serves through a bind never reaches FUSE, so such a folder is watched only from the first request FUSE
	// serves in it (watchLater: before its bind is made, or once it was released): an agent's writes in a bound
	// workspace cost the daemon nothing. A lazy folder's top (an empty app/ waiting for its first entry) is
	// watched at once.
	bound      bool
	watchLater atomic.Pointer[string]
	// ctime (ns) of the attributes last given to the kernel: a store event that leaves it unchanged changed
	// nothing the kernel holds, so it costs no invalidation (cache.go).
	ctime atomic.Int64
}

// storeNode is a node backed by a store file or folder: Node, and the kinds that embed it. The nodes that are
// not (Root, Sessions, OnlyViewsDir, ByClaudeID, go-fuse's symlinks) are synthetic.
type storeNode interface {
	fs.InodeEmbedder
	node() *Node
}

func (n *Node) node() *Node { return n }

// asNode is the store node of in, if in is one.
func asNode(in *fs.Inode) (*Node, bool) {
	if s, ok := in.Operations().(storeNode); ok {
		return s.node(), true
	}
	return nil, false
}

// parentKind is a folder kind whose children are not all plain passthrough nodes (SessionDir, AgentDir, View).
type parentKind interface {
	// childNode returns a new node of child name's kind (store path rel, a folder if dir), nil for a plain Node.
	childNode(name, rel string, dir bool) storeNode
}

// inTranscripts reports whether the node is seen through a view of the transcript folder, where unlink moves to
// the trash and writes record the view's name as an alias.
func (n *Node) inTranscripts() bool { return n.row != nil && n.row.transcripts }

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
	_ = (fs.NodeReleaser)((*Node)(nil))
	_ = (fs.NodeGetlker)((*Node)(nil))
	_ = (fs.NodeSetlker)((*Node)(nil))
	_ = (fs.NodeSetlkwer)((*Node)(nil))
	_ = (fs.NodeOnForgetter)((*Node)(nil))
)

// path is the node's path relative to the store's sessions folder ("<id>/workspace/x"), or "" for a node no
// longer in the tree (unlinked), which makes path operations fail with ENOENT. It is resolved only beneath the
// sessions folder (at.go), so a rename or a planted symlink can never point it outside the store.
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
		a, ok := asNode(parent)
		if !ok {
			return "" // reached a synthetic folder without an anchor: not a store path
		}
		if a.base != "" {
			slices.Reverse(names)
			return a.base + "/" + strings.Join(names, "/")
		}
		in = parent
	}
}

// child is the store path of n's child name: below n's, but for a view's own file (view.go).
func (n *Node) child(name string) string {
	if v, ok := n.Operations().(*View); ok {
		if own, ok := v.ownChild(name); ok {
			return own
		}
	}
	p := n.path()
	if p == "" {
		return ""
	}
	return p + "/" + name
}

// newChild makes the inode for store file rel, just looked up or created under n as name.
func (n *Node) newChild(ctx context.Context, name, rel string, st *syscall.Stat_t, gen uint64) *fs.Inode {
	attr := n.tree.stableAttr(st, gen, n.alias)
	if old := existingChild(&n.Inode, name, attr); old != nil {
		return old
	}
	n.servedHere()
	dir := st.Mode&syscall.S_IFMT == syscall.S_IFDIR
	var op storeNode = &Node{}
	if k, ok := n.Operations().(parentKind); ok {
		if kind := k.childNode(name, rel, dir); kind != nil {
			op = kind
		}
	}
	ch := op.node()
	ch.tree, ch.id, ch.alias, ch.row = n.tree, n.id, n.alias, n.row
	ch.bound = n.bound || n.bindsChild(name)
	n.tree.nodeAdded()
	in := n.NewInode(ctx, op, attr)
	switch {
	case !dir:
	case ch.bound && !(bind.Lazy(name) && !n.bound):
		ch.watchLater.Store(&rel)
	default:
		ch.watch(rel)
	}
	return in
}

// bindsChild reports whether the mount binds n's child name (a session's workspace, app or mcps).
func (n *Node) bindsChild(name string) bool {
	_, ok := n.Operations().(*SessionDir)
	return ok && n.tree.Binder != nil && bind.IsMountDir(name)
}

// servedHere: FUSE serves a request in folder n, so the kernel caches what it answers: a folder beneath a bind
// is watched from now on (until its events find the bind there again: Tree.boundCheck).
func (n *Node) servedHere() {
	if rel := n.watchLater.Swap(nil); rel != nil {
		n.watch(*rel)
	}
}

// existingChild is parent's child name if it is already the inode of attr. A new inode for a file the kernel
// already knows would be dropped by go-fuse in favour of the known one, after it was registered with the watcher:
// never forgotten, it would keep a watch and draw invalidations nobody needs.
func existingChild(parent *fs.Inode, name string, attr fs.StableAttr) *fs.Inode {
	if old := parent.GetChild(name); old != nil && old.StableAttr() == attr {
		return old
	}
	return nil
}

// watch registers a folder node with the watcher as a kernel-cached view of store folder rel.
func (n *Node) watch(rel string) {
	n.watched = rel
	n.tree.watchFolder(rel, &n.Inode)
}

// unwatch drops the folder's registration with the watcher before the kernel forgets it (its folder is no longer
// at its name). The caller keeps OnForget from racing it (session_nodes.go).
func (n *Node) unwatch() {
	if w := n.watched; w != "" {
		n.watched = ""
		n.tree.unwatchFolder(w, &n.Inode)
	}
}

func (n *Node) OnForget() {
	n.tree.nodeForgotten()
	if n.inTranscripts() {
		n.tree.lookedUpIn.Delete(n.StableAttr().Ino)
	}
	if n.watched != "" {
		n.tree.unwatchFolder(n.watched, &n.Inode)
	}
}

// noteOwnChange records that n changes its child at store path rel itself, so the store watcher does not
// invalidate it; below a view of the transcript folder, that the view's name was written through.
func (n *Node) noteOwnChange(rel string) {
	n.tree.noteOwnChange(rel, &n.Inode)
	if n.inTranscripts() {
		n.tree.wroteThrough(n.id, n.alias) // a name made, removed or renamed in the view
	}
}

// entry fills the answer to a lookup or creation of ch (attributes st): a store node's carry the tree's
// timeouts, a synthetic folder's the mount's.
func (n *Node) entry(out *fuse.EntryOut, st *syscall.Stat_t, ch *fs.Inode) {
	out.Attr.FromStat(st)
	out.Attr.Ino = ch.StableAttr().Ino
	noteCtime(ch, &out.Attr)
	if _, ok := asNode(ch); ok {
		t := n.tree.timeout()
		out.SetEntryTimeout(t)
		out.SetAttrTimeout(t)
	}
}

// Lookup finds name in the store.
func (n *Node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n.tree.noteUse(ctx, n.id)
	return n.lookupStore(ctx, name, out)
}

// lookupStore finds name in the store, below n's store path, as a node of the kind n gives it.
func (n *Node) lookupStore(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	p := n.child(name)
	var st syscall.Stat_t
	gen, err := n.tree.lstatAt(p, &st)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	ch := n.newChild(ctx, name, p, &st, gen)
	if n.inTranscripts() {
		n.tree.lookedUpIn.Store(ch.StableAttr().Ino, n.alias)
	}
	n.entry(out, &st, ch)
	return ch, 0
}

func (n *Node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return n.tree.statfs(out)
}

func (n *Node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.tree.touch(n.id)
	n.servedHere() // a folder's attributes the kernel keeps change with what is in it
	if fga, ok := f.(fs.FileGetattrer); ok && f != nil {
		errno := fga.Getattr(ctx, out)
		out.Ino = n.StableAttr().Ino
		if errno == 0 {
			noteCtime(&n.Inode, &out.Attr)
			out.SetTimeout(n.tree.timeout())
		}
		return errno
	}
	var st syscall.Stat_t
	if _, err := n.tree.lstatAt(n.path(), &st); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStat(&st)
	out.Ino = n.StableAttr().Ino
	noteCtime(&n.Inode, &out.Attr)
	out.SetTimeout(n.tree.timeout())
	return 0
}

func (n *Node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	p := n.path()
	if fsa, ok := f.(fs.FileSetattrer); ok && f != nil {
		if errno := fsa.Setattr(ctx, in, out); errno != 0 {
			return errno
		}
		return n.Getattr(ctx, f, out)
	}
	if errno := n.tree.setattr(ctx, p, in); errno != 0 {
		return errno
	}
	return n.Getattr(ctx, nil, out)
}

// withAttrTimeout gives the answer to SETATTR the mount's attribute timeout (go-fuse leaves it 0, which would cost
// the next stat a round trip). A later change behind the mount moves the file's ctime, which the watcher
// catches (cache.go).
func (t *Tree) withAttrTimeout(out *fuse.AttrOut, errno syscall.Errno) syscall.Errno {
	if errno == 0 {
		out.SetTimeout(t.timeout())
	}
	return errno
}

// Open opens the store file; go-fuse hands its descriptor to the kernel for FUSE passthrough, so reads and
// writes do not cross the daemon. O_APPEND is dropped because the kernel computes append offsets itself.
func (n *Node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	n.tree.touch(n.id)
	flags &^= syscall.O_APPEND | fuse.FMODE_EXEC
	p := n.path()
	payer, errno := takeOpen(ctx, n.id) // the store descriptor held until RELEASE (opens.go)
	if errno != 0 {
		return nil, 0, errno
	}
	// O_NONBLOCK: the kernel sends OPEN only for files and folders; should the name have become a FIFO
	// meanwhile, the daemon must not wait on it.
	fd, err := n.tree.openAt(p, int(flags)|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		opens.give(payer)
		return nil, 0, fs.ToErrno(err)
	}
	h := newHeldFile(fd, payer)
	if int(flags)&syscall.O_NONBLOCK == 0 {
		_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFL, int(flags)&^(syscall.O_ACCMODE|syscall.O_CREAT|syscall.O_EXCL|syscall.O_TRUNC|syscall.O_NOCTTY))
	}
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		n.writtenThrough(ctx) // an append through a view: bound from the next one on (view.go)
		killPriv(ctx, fd)
		return n.tree.writer(p, h), 0, 0
	}
	return h, 0, 0
}

// Flush answers ENOSYS, which tells the kernel never to send FLUSH again: close(2) then costs no round trip.
// There is nothing to flush: writes go to the store file through passthrough, and POSIX locks are dropped at
// RELEASE (locks.go).
func (n *Node) Flush(ctx context.Context, f fs.FileHandle) syscall.Errno { return syscall.ENOSYS }

// killPriv clears set-user-ID and set-group-ID when an unprivileged caller opens a file for writing. The mount
// negotiates HANDLE_KILLPRIV_V2 (so the kernel does not ask for security.capability before every write), which
// makes this our job; passthrough writes never reach us, so it is done at open, before any write.
func killPriv(ctx context.Context, fd int) {
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil {
		return
	}
	if mode, kill := killPrivMode(ctx, st.Mode); kill {
		_ = syscall.Fchmod(fd, mode)
	}
}

// killPrivMode is the mode a write by the caller leaves a file of mode st_mode with, and whether it changes.
func killPrivMode(ctx context.Context, stMode uint32) (uint32, bool) {
	caller, ok := fuse.FromContext(ctx)
	if !ok || caller.Uid == 0 {
		return 0, false
	}
	mode := stMode &^ syscall.S_IFMT
	clear := uint32(syscall.S_ISUID)
	if mode&syscall.S_IXGRP != 0 {
		clear |= syscall.S_ISGID // without group-exec, S_ISGID means mandatory locking: kept, as the kernel does
	}
	return mode &^ clear, mode&clear != 0
}

func (n *Node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	p := n.child(name)
	flags &^= syscall.O_APPEND
	payer, errno := takeOpen(ctx, n.id) // the store descriptor held until RELEASE (opens.go)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	if v, ok := n.Operations().(*View); ok {
		v.ownFolder(name, p)
	}
	n.noteOwnChange(p)
	var fd int
	err := asCaller(ctx, func() (err error) {
		// The caller asked for these access flags on a file it creates: granted whatever mode it asked for,
		// as open(2) does. O_EXCL: never open what a racing process put at the name.
		fd, err = n.tree.openAt(p, int(flags)|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW, mode)
		return err
	})
	if err == syscall.EEXIST && flags&syscall.O_EXCL == 0 {
		fd, err = n.tree.openAt(p, int(flags)|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	}
	if err != nil {
		opens.give(payer)
		return nil, nil, 0, fs.ToErrno(err)
	}
	var st syscall.Stat_t
	gen, err := fstat(fd, &st)
	if err != nil {
		syscall.Close(fd)
		opens.give(payer)
		return nil, nil, 0, fs.ToErrno(err)
	}
	ch := n.newChild(ctx, name, p, &st, gen)
	n.entry(out, &st, ch)
	return ch, n.tree.writer(p, newHeldFile(fd, payer)), 0, 0
}

// createdChild returns the inode of name, just created at rel (a folder, node or link), with its attributes. On
// failure it removes what was created.
func (n *Node) createdChild(ctx context.Context, name, rel string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	var st syscall.Stat_t
	gen, err := n.tree.lstatAt(rel, &st)
	if err != nil {
		_ = n.tree.sessions.Remove(rel)
		return nil, fs.ToErrno(err)
	}
	ch := n.newChild(ctx, name, rel, &st, gen)
	n.entry(out, &st, ch)
	return ch, 0
}

// create makes name under n with mk, as the caller, and returns its inode.
func (n *Node) create(ctx context.Context, name string, out *fuse.EntryOut, mk func(dirfd int, name string) error) (*fs.Inode, syscall.Errno) {
	p := n.child(name)
	n.noteOwnChange(p)
	err := n.tree.atParent(p, func(dirfd int, name string) error {
		return asCaller(ctx, func() error { return mk(dirfd, name) })
	})
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	return n.createdChild(ctx, name, p, out)
}

func (n *Node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.create(ctx, name, out, func(dirfd int, name string) error { return unix.Mkdirat(dirfd, name, mode) })
}

// Mknod makes FIFOs, sockets and files; device nodes are refused: a session's processes (root in a container)
// must not plant a device in the store that a host process could open.
func (n *Node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFIFO, syscall.S_IFSOCK, syscall.S_IFREG, 0:
	default:
		return nil, syscall.EPERM
	}
	return n.create(ctx, name, out, func(dirfd int, name string) error { return unix.Mknodat(dirfd, name, mode, 0) })
}

func (n *Node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.create(ctx, name, out, func(dirfd int, name string) error { return unix.Symlinkat(target, dirfd, name) })
}

func (n *Node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	t, ok := target.(storeNode)
	if !ok {
		return nil, syscall.EXDEV
	}
	src := t.node().path()
	if src == "" {
		return nil, syscall.ENOENT
	}
	p := n.child(name)
	n.noteOwnChange(p)
	err := n.tree.atParent(src, func(sfd int, sname string) error {
		return n.tree.atParent(p, func(dfd int, dname string) error {
			return unix.Linkat(sfd, sname, dfd, dname, 0) // the name itself, never what a link points at
		})
	})
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	return n.createdChild(ctx, name, p, out)
}

func (n *Node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	var out []byte
	err := n.tree.withPath(n.path(), func(fd int, st *syscall.Stat_t) error {
		if st.Mode&syscall.S_IFMT != syscall.S_IFLNK {
			return syscall.EINVAL
		}
		for size := 256; ; size *= 2 {
			buf := make([]byte, size)
			sz, err := unix.Readlinkat(fd, "", buf)
			if err != nil {
				return err
			}
			if sz < len(buf) {
				out = buf[:sz]
				return nil
			}
		}
	})
	return out, fs.ToErrno(err)
}

// Unlink removes a file; in the transcript folder it moves it to the session's transcript trash instead, since
// Claude Code ages transcripts out at start-up and people rm the wrong thing.
func (n *Node) Unlink(ctx context.Context, name string) syscall.Errno {
	p := n.child(name)
	n.noteOwnChange(p)
	if n.inTranscripts() {
		return n.refreshes(name, n.tree.trashTranscript(n.id, p))
	}
	return n.refreshes(name, fs.ToErrno(n.tree.atParent(p, func(dirfd int, name string) error { return unix.Unlinkat(dirfd, name, 0) })))
}

// refreshes notes, after an unlink or rename of name that succeeded, that the kernel dropped the file's
// attributes itself (its link count and ctime changed): the store events of that change need no invalidation.
func (n *Node) refreshes(name string, errno syscall.Errno) syscall.Errno {
	if errno == 0 {
		if ch := n.GetChild(name); ch != nil {
			if cn, ok := asNode(ch); ok {
				cn.ctime.Store(kernelAsks)
			}
		}
	}
	return errno
}

func (n *Node) Rmdir(ctx context.Context, name string) syscall.Errno {
	p := n.child(name)
	n.noteOwnChange(p)
	return fs.ToErrno(n.tree.atParent(p, func(dirfd int, name string) error {
		return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
	}))
}

// Rename moves within the mount's store; a rename onto a synthetic folder (the sessions folder, say) is EXDEV,
// which makes mv fall back to copying.
func (n *Node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	npk, ok := newParent.(storeNode)
	if !ok {
		return syscall.EXDEV
	}
	np := npk.node()
	if n.base != "" && n.inTranscripts() && np.inTranscripts() && np.base == n.base && isSetAside(name, newName) {
		// Claude Code's /cd moves a transcript to the new cwd's projects folder, first setting aside a same-named
		// file found there as <name>.superseded-<ms>. Here every projects folder is a view of one folder, so the
		// file "found there" is the very one being moved: setting it aside would move it from under the move.
		// ENOENT is what Claude Code takes for "nothing to set aside"; the move that follows, a file renamed onto
		// itself, is then a no-op.
		return syscall.ENOENT
	}
	src, dst := n.child(name), np.child(newName)
	n.noteOwnChange(src)
	np.noteOwnChange(dst)
	return n.refreshes(name, fs.ToErrno(n.tree.atParent(src, func(sfd int, sname string) error {
		return n.tree.atParent(dst, func(dfd int, dname string) error {
			return unix.Renameat2(sfd, sname, dfd, dname, uint(flags))
		})
	})))
}

// isSetAside: newName is name set aside by Claude Code, name + ".superseded-" + milliseconds.
func isSetAside(name, newName string) bool {
	ms, ok := strings.CutPrefix(newName, name+".superseded-")
	return ok && ms != "" && strings.Trim(ms, "0123456789") == ""
}

// OpendirHandle lets the kernel keep the listing: it rereads it when the folder's mtime changes (auto
// invalidation), which a change through the mount or a store event (the watcher invalidates the folder's
// attributes) always brings.
func (n *Node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	n.tree.touch(n.id)
	n.servedHere()
	fd, err := n.tree.openAt(n.path(), syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, 0, fs.ToErrno(err)
	}
	ds, errno := fs.NewLoopbackDirStreamFd(fd)
	if errno != 0 {
		syscall.Close(fd)
		return nil, 0, errno
	}
	var st syscall.Stat_t
	if _, err := fstat(fd, &st); err == nil {
		if dirs, all := n.tree.inoMix(st.Dev, n.alias); dirs|all != 0 {
			return &viewDirStream{FileHandle: ds, dirs: dirs, all: all}, fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, 0
		}
	}
	return ds, fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, 0
}

// noLabels is the SELinux label's attribute. The kernel asks the file system for it only when no security module
// answers it (SELinux labels a FUSE mount itself), so where it reaches the mount, labels mean nothing here: the
// mount answers that it keeps none (EOPNOTSUPP, not ENODATA), which ls -l, asking for it at every file, takes as
// the whole mount's answer (coreutils' getfilecon_cache, by device). A GETXATTR round trip per file listed was
// 12 of the 20 FUSE requests of a warm ls -lR of .claude. ACLs are answered from the kernel's own cache (EnableAcl);
// the ENOSYS that would stop every GETXATTR would take them away too.
const noLabels = "security.selinux"

func (n *Node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	if attr == noLabels {
		return 0, syscall.EOPNOTSUPP
	}
	var sz int
	err := n.tree.withPath(n.path(), func(fd int, st *syscall.Stat_t) (err error) {
		if st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
			return syscall.ENODATA
		}
		sz, err = unix.Getxattr(procPath(fd), attr, dest)
		return err
	})
	return uint32(sz), fs.ToErrno(err)
}

func (n *Node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	if attr == noLabels {
		return syscall.EOPNOTSUPP
	}
	return fs.ToErrno(n.tree.withPath(n.path(), func(fd int, st *syscall.Stat_t) error {
		if st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
			return syscall.EPERM
		}
		return unix.Setxattr(procPath(fd), attr, data, int(flags))
	}))
}

func (n *Node) Removexattr(ctx context.Context, attr string) syscall.Errno {
	return fs.ToErrno(n.tree.withPath(n.path(), func(fd int, st *syscall.Stat_t) error {
		if st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
			return syscall.ENODATA
		}
		return unix.Removexattr(procPath(fd), attr)
	}))
}

func (n *Node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	var sz int
	err := n.tree.withPath(n.path(), func(fd int, st *syscall.Stat_t) (err error) {
		if st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
			return nil
		}
		sz, err = unix.Listxattr(procPath(fd), dest)
		return err
	})
	return uint32(sz), fs.ToErrno(err)
}
