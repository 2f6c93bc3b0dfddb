package nodes

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/session"
)

// Sessions is the sessions/ folder: one entry per session in the store, read live, so a session made with the
// CLI while mounted appears at once. mkdir makes a session; rm -rf moves it to the trash whole (sessionrm.go).
type Sessions struct {
	gofs.Inode
	tree *Tree
}

var (
	_ = (gofs.NodeLookuper)((*Sessions)(nil))
	_ = (gofs.NodeGetattrer)((*Sessions)(nil))
	_ = (gofs.NodeReaddirer)((*Sessions)(nil))
	_ = (gofs.NodeMkdirer)((*Sessions)(nil))
	_ = (gofs.NodeRmdirer)((*Sessions)(nil))
	_ = (gofs.NodeRenamer)((*Sessions)(nil))
	_ = (gofs.NodeStatfser)((*Sessions)(nil))
	_ = (gofs.NodeCreater)((*Sessions)(nil))
	_ = (gofs.NodeMknoder)((*Sessions)(nil))
	_ = (gofs.NodeSymlinker)((*Sessions)(nil))
)

// Create, Mknod and Symlink: sessions/ holds sessions, each a folder (mkdir sessions/ID makes one), so a file is
// not permitted here: EPERM. go-fuse's default, EROFS, told a person touching a file that the whole mount was
// read-only.
func (s *Sessions) Create(context.Context, string, uint32, uint32, *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EPERM
}

func (s *Sessions) Mknod(context.Context, string, uint32, uint32, *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

func (s *Sessions) Symlink(context.Context, string, string, *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

func (s *Sessions) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if layout.ValidateID(name) != nil {
		if errno, ok := fault(name, func(id string) { s.NotifyEntry(id) }); ok {
			return nil, errno
		}
		return nil, syscall.ENOENT
	}
	if target, ok := hostileLink(name, func(id string) { s.NotifyEntry(id) }); ok {
		out.Attr.Mode = syscall.S_IFLNK | 0o777
		return s.NewInode(ctx, &gofs.MemSymlink{Data: []byte(target)}, gofs.StableAttr{Mode: syscall.S_IFLNK}), 0
	}
	return s.session(ctx, name, out)
}

func (s *Sessions) session(ctx context.Context, id string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	s.tree.noteUse(ctx, id)
	var st syscall.Stat_t
	gen, err := s.tree.lstatAt(id, &st)
	if err != nil {
		return nil, gofs.ToErrno(err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return nil, syscall.ENOENT
	}
	attr := s.tree.stableAttr(&st, gen, 0)
	ch := existingChild(&s.Inode, id, attr)
	if ch == nil {
		ch = s.sessionNode(ctx, id, attr)
	}
	out.Attr.FromStat(&st)
	noteCtime(ch, &out.Attr)
	s.tree.wantBinds(ctx, id)
	return ch, 0
}

func (s *Sessions) Getattr(ctx context.Context, _ gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	var st syscall.Stat_t
	if _, err := fstat(s.tree.sessions.Fd(), &st); err != nil {
		return gofs.ToErrno(err)
	}
	out.FromStat(&st)
	out.Ino = s.StableAttr().Ino
	return 0
}

func (s *Sessions) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return s.tree.statfs(out)
}

func (s *Sessions) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	fd, err := s.tree.sessions.OpenAt(".", syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, gofs.ToErrno(err)
	}
	ents, errno := readEntries(fd, func(e *fuse.DirEntry) bool {
		return e.Mode&syscall.S_IFMT == syscall.S_IFDIR && layout.ValidateID(e.Name) == nil
	})
	if errno != 0 {
		return nil, errno
	}
	return gofs.NewListDirStream(ents), 0
}

// Mkdir creates a session with the convention's folders, owned by the caller.
func (s *Sessions) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if layout.ValidateID(name) != nil {
		return nil, syscall.EINVAL
	}
	s.tree.noteOwnChange(name, &s.Inode)
	if _, err := session.Create(s.tree.Store, name, session.Options{Mountpoint: s.tree.Mountpoint}); err != nil {
		return nil, storeErrno(err)
	}
	chownTree(ctx, s.tree.Store.Dir(name))
	return s.session(ctx, name, out)
}

// Rmdir moves an empty session folder to the trash; a session that still holds anything is ENOTEMPTY, as rmdir
// of any folder (rm -rf, or "sessionfs rm", moves a whole session to the trash).
func (s *Sessions) Rmdir(ctx context.Context, name string) syscall.Errno {
	if empty, err := s.tree.emptyFolder(name); err != nil {
		return gofs.ToErrno(err)
	} else if !empty {
		return syscall.ENOTEMPTY
	}
	s.tree.noteOwnChange(name, &s.Inode)
	defer s.tree.removing(name)()
	if _, err := s.tree.Store.Remove(name); err != nil {
		return storeErrno(err)
	}
	return 0
}

// Rename of a session is refused: its id is recorded in its metadata and in running containers' binds.
func (s *Sessions) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	return syscall.EPERM
}

// storeErrno maps a store error to the errno a shell user should see.
func storeErrno(err error) syscall.Errno {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, layout.ErrInvalidID):
		return syscall.EINVAL
	case errors.Is(err, layout.ErrExists):
		return syscall.EEXIST
	case errors.Is(err, layout.ErrNotFound):
		return syscall.ENOENT
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return syscall.EIO
}

// chownTree gives a session made by the root daemon to the caller, so a user (or a container running as one,
// with allow_other) can write in it.
func chownTree(ctx context.Context, root string) {
	caller, ok := fuse.FromContext(ctx)
	if !ok || syscall.Getuid() != 0 || caller.Uid == 0 {
		return
	}
	_ = filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			_ = syscall.Lchown(p, int(caller.Uid), int(caller.Gid))
		}
		return nil
	})
}
