package nodes

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// ViewsDir is an agent's cwd-keyed folder that may hold entries of its own (Gemini's tmp/ holds bin/), one row of
// the views table (views.go): a store folder passed through, but for its row's view names, each of which leads to
// the canonical entry (a View) once that exists. The canonical name, and every name while there is no canonical
// entry, is the folder's own entry: a lookup never makes the canonical entry, so rm -rf of the agent's folder does
// not bring it back while it removes the views. mkdir of a view name makes it.
//
// Its listing leaves out the view names while the canonical entry exists (listing): a lookup answers them, which
// is all the agents do with a cwd's name, and a walker (tar, cp -a, rsync, grep -r, find, du) meets the canonical
// entry's files once. Gemini lists tmp/ only to find a cwd's name by its claim when projects.json has lost it, and
// claims a name again when it finds none: every name shows the same chats.
type ViewsDir struct {
	Node
	views *viewsRow
}

var (
	_ = (fs.NodeLookuper)((*ViewsDir)(nil))
	_ = (fs.NodeMkdirer)((*ViewsDir)(nil))
	_ = (fs.NodeRmdirer)((*ViewsDir)(nil))
	_ = (fs.NodeUnlinker)((*ViewsDir)(nil))
	_ = (fs.NodeOpendirHandler)((*ViewsDir)(nil))
)

func (d *ViewsDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	d.tree.noteUse(ctx, d.id)
	if ch, errno, ok := d.lookupView(ctx, name, out); ok {
		return ch, errno
	}
	return d.lookupStore(ctx, name, out)
}

// lookupView answers a lookup of a view name while the canonical entry exists; ok is false otherwise.
func (d *ViewsDir) lookupView(ctx context.Context, name string, out *fuse.EntryOut) (ch *fs.Inode, errno syscall.Errno, ok bool) {
	if !d.views.isView(name) {
		return nil, 0, false
	}
	dir := d.path()
	if dir == "" {
		return nil, syscall.ENOENT, true
	}
	t := d.tree
	if _, done := t.viewsFolded.LoadOrStore(dir, struct{}{}); !done {
		// First view of this folder in this mount: what the agent filed under other names while the store was
		// not mounted joins the canonical entry, which every view would otherwise hide.
		t.fold(d.id, d.views)
	}
	v, _ := t.viewOf(d.views, dir, name)
	var st syscall.Stat_t
	gen, err := t.lstatAt(v.target, &st)
	if err == syscall.ENOENT {
		return nil, 0, false
	}
	if err != nil {
		return nil, fs.ToErrno(err), true
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return nil, syscall.ENOTDIR, true // never shown as the agent's folder
	}
	return t.viewInode(ctx, &d.Inode, d.id, v, &st, gen, out), 0, true
}

// OpendirHandle lists the store's folder without the view names while the canonical entry is a folder: under them
// a walker would meet the canonical entry's files again, and the store keeps nothing of theirs but a claim (their
// Own file, which the agent writes again). Kept by the kernel as any folder's: the canonical entry's coming and
// going changes the folder's mtime.
func (d *ViewsDir) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	t := d.tree
	t.touch(d.id)
	dir := d.path()
	fd, err := t.openAt(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, 0, fs.ToErrno(err)
	}
	var st, canon syscall.Stat_t
	var dirs, all uint64
	if _, err := fstat(fd, &st); err == nil {
		dirs, all = t.inoMix(st.Dev, d.alias)
	}
	_, err = t.lstatAt(dir+"/"+d.views.Canonical, &canon)
	hide := err == nil && canon.Mode&syscall.S_IFMT == syscall.S_IFDIR
	ents, errno := readEntries(fd, func(e *fuse.DirEntry) bool {
		if e.Name == "." || e.Name == ".." {
			return true
		}
		if hide && d.views.isView(e.Name) {
			return false
		}
		e.Ino ^= all
		if e.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			e.Ino ^= dirs
		}
		return true
	})
	if errno != 0 {
		return nil, 0, errno
	}
	return fs.NewListDirStream(ents).(fs.FileHandle), fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, 0
}

// Mkdir of a view name (the agent's first run in a cwd) makes the canonical entry, and the name is its view.
func (d *ViewsDir) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if d.tree.ReadOnly || !d.views.isView(name) {
		return d.Node.Mkdir(ctx, name, mode, out)
	}
	dir := d.path()
	if dir == "" {
		return nil, syscall.ENOENT
	}
	if err := d.tree.mkdirOwned(d.id, dir+"/"+d.views.Canonical); err != nil && err != syscall.EEXIST {
		return nil, fs.ToErrno(err)
	}
	ch, errno, ok := d.lookupView(ctx, name, out)
	if !ok {
		return nil, syscall.ENOENT // the canonical entry went again at once
	}
	return ch, errno
}

// Rmdir of a view name removes the name's own folder (its claim, if any) and leaves the canonical entry, as rmdir
// of an alias of .claude/projects forgets it. rmdir of the canonical entry takes the views' claims with it (every
// view was that entry), since a view met after it can no longer be opened and rm -rf skips it. So rm -rf of an
// agent's folder works whatever order it meets the names in.
func (d *ViewsDir) Rmdir(ctx context.Context, name string) syscall.Errno {
	if name == d.views.Canonical && d.views.Own != "" {
		return d.removeCanonical(name)
	}
	if !d.views.isView(name) {
		return d.Node.Rmdir(ctx, name)
	}
	return d.removeView(name)
}

// Unlink of a view name is as its rmdir.
func (d *ViewsDir) Unlink(ctx context.Context, name string) syscall.Errno {
	if !d.views.isView(name) {
		return d.Node.Unlink(ctx, name)
	}
	return d.removeView(name)
}

// removeView removes view name's own folder in the store and the claim in it; a view with neither is removed
// already.
func (d *ViewsDir) removeView(name string) syscall.Errno {
	own := d.child(name)
	if own == "" {
		return syscall.ENOENT
	}
	d.noteOwnChange(own)
	if d.views.Own != "" {
		d.noteOwnChange(own + "/" + d.views.Own)
		_ = d.tree.atParent(own+"/"+d.views.Own, func(dirfd int, name string) error { return unix.Unlinkat(dirfd, name, 0) })
	}
	err := d.tree.atParent(own, func(dirfd int, name string) error { return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR) })
	if err == syscall.ENOENT {
		err = nil // a view with no claim of its own: nothing to remove
	}
	return fs.ToErrno(err)
}

// removeCanonical removes the (empty) canonical entry, then every view name's folder in the store that holds
// nothing but its claim.
func (d *ViewsDir) removeCanonical(name string) syscall.Errno {
	p := d.child(name)
	d.noteOwnChange(p)
	err := d.tree.atParent(p, func(dirfd int, name string) error { return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR) })
	if err != nil {
		return fs.ToErrno(err)
	}
	dir := d.path()
	ents, err := d.tree.sessions.ReadDir(dir)
	if err != nil {
		return 0
	}
	v := d.views
	for _, e := range ents {
		if !e.IsDir() || !v.isView(e.Name()) {
			continue
		}
		own := dir + "/" + e.Name()
		if in, err := d.tree.sessions.ReadDir(own); err != nil || len(in) != 1 || in[0].Name() != v.Own {
			continue // not only a claim: left to the agent's own rm
		}
		_ = d.tree.sessions.Remove(own + "/" + v.Own)
		_ = d.tree.sessions.Remove(own)
	}
	return 0
}
