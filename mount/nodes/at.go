package nodes

import (
	"context"
	"io"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
)

// Every store access of the nodes is made here, on a path relative to the store's sessions folder ("<id>/..."),
// resolved beneath that folder's descriptor with openat2 and no symlink followed (layout.Dir). A session's
// processes may rename folders and plant symlinks while we work: at worst an operation then fails (ENOENT,
// ELOOP); it never reaches outside the store's sessions folder, and the path of a node never starts outside its
// own session, whose name is its first component. Paths are never joined into an absolute string, so depth is no
// limit either.

// lstatAt reads rel's attributes without following it.
func (t *Tree) lstatAt(rel string, st *syscall.Stat_t) (gen uint64, err error) {
	fd, err := t.openAt(rel, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	return fstat(fd, st)
}

// parentAt opens the folder holding rel (O_PATH) and returns it with rel's last name. The caller closes fd.
func (t *Tree) parentAt(rel string) (fd int, name string, err error) {
	if rel == "" {
		return -1, "", syscall.ENOENT
	}
	return t.sessions.Parent(rel)
}

// atParent runs fn on rel's folder and last name.
func (t *Tree) atParent(rel string, fn func(dirfd int, name string) error) error {
	pfd, name, err := t.parentAt(rel)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	return fn(pfd, name)
}

// withPath runs fn on an O_PATH descriptor of rel itself (a symlink is not followed) and its attributes.
func (t *Tree) withPath(rel string, fn func(fd int, st *syscall.Stat_t) error) error {
	fd, err := t.openAt(rel, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st syscall.Stat_t
	if _, err := fstat(fd, &st); err != nil {
		return err
	}
	return fn(fd, &st)
}

// procPath names the object an O_PATH descriptor holds, for the calls that take no descriptor of that kind
// (chmod, truncate, xattrs). The kernel resolves it to exactly that object, never by name.
func procPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// openAt opens rel with flags; a symlink anywhere is ELOOP. "" (a node no longer in the tree) is ENOENT, never
// the sessions folder itself.
func (t *Tree) openAt(rel string, flags int, mode uint32) (int, error) {
	if rel == "" {
		return -1, syscall.ENOENT
	}
	return t.sessions.OpenAt(rel, flags, mode)
}

// asCaller runs fn with the filesystem identity of the FUSE request's caller, when the daemon is root and the
// caller is not: what fn creates then belongs to the caller, takes a setgid folder's group, and is refused
// where the caller may not write, exactly as the kernel would do for the caller on the store itself. The
// identity is per thread (setfsuid), so the goroutine keeps its thread meanwhile.
func asCaller(ctx context.Context, fn func() error) error {
	caller, ok := fuse.FromContext(ctx)
	if !ok || !isRoot || (caller.Uid == 0 && caller.Gid == 0) {
		return fn()
	}
	runtime.LockOSThread()
	setfsgid(int(caller.Gid))
	setfsuid(int(caller.Uid))
	err := fn()
	setfsuid(0)
	setfsgid(0)
	if fsuid() != 0 {
		return err // never hand a thread with another identity back to the runtime: it ends with the goroutine
	}
	runtime.UnlockOSThread()
	return err
}

var isRoot = unix.Geteuid() == 0

func setfsuid(uid int) { unix.RawSyscall(unix.SYS_SETFSUID, uintptr(uid), 0, 0) }
func setfsgid(gid int) { unix.RawSyscall(unix.SYS_SETFSGID, uintptr(gid), 0, 0) }

// fsuid reads the thread's filesystem uid (setfsuid with an invalid id changes nothing and returns it).
func fsuid() int {
	r, _, _ := unix.RawSyscall(unix.SYS_SETFSUID, ^uintptr(0), 0, 0)
	return int(r)
}

// sessionOwner is the owner of session id's folder: what the daemon makes in a session on its own (the
// canonical folder again) belongs to it, not to root.
func (t *Tree) sessionOwner(id string) (uid, gid int) {
	var st syscall.Stat_t
	if _, err := t.lstatAt(id, &st); err != nil {
		return -1, -1
	}
	return int(st.Uid), int(st.Gid)
}

// mkdirOwned makes the folder rel for session id on the daemon's own account (a canonical entry made again, a
// view's own folder): it belongs to the session's owner, as the rest of the session.
func (t *Tree) mkdirOwned(id, rel string) error {
	return t.atParent(rel, func(dirfd int, name string) error {
		if err := unix.Mkdirat(dirfd, name, 0o755); err != nil {
			return err
		}
		if uid, gid := t.sessionOwner(id); isRoot && uid >= 0 {
			return unix.Fchownat(dirfd, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
		}
		return nil
	})
}

// openSessions opens the store's sessions folder for safe resolution.
func openSessions(store *layout.Store) (*layout.Dir, error) {
	return layout.OpenDir(store.SessionsDir())
}

// setattr applies a SETATTR without a file handle to rel: each change is made on the object rel names when the
// call starts, never through a symlink.
func (t *Tree) setattr(ctx context.Context, rel string, in *fuse.SetAttrIn) syscall.Errno {
	if m, ok := in.GetMode(); ok {
		err := t.withPath(rel, func(fd int, st *syscall.Stat_t) error {
			if st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
				return syscall.EOPNOTSUPP // as fchmodat(AT_SYMLINK_NOFOLLOW) on Linux
			}
			return syscall.Chmod(procPath(fd), m)
		})
		if err != nil {
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
		err := t.atParent(rel, func(dirfd int, name string) error {
			return unix.Fchownat(dirfd, name, su, sg, unix.AT_SYMLINK_NOFOLLOW)
		})
		if err != nil {
			return fs.ToErrno(err)
		}
	}
	// Truncate before times, so an explicit mtime is not clobbered by the truncate.
	if sz, ok := in.GetSize(); ok {
		err := t.withPath(rel, func(fd int, st *syscall.Stat_t) error {
			switch st.Mode & syscall.S_IFMT {
			case syscall.S_IFREG:
			case syscall.S_IFDIR:
				return syscall.EISDIR
			default:
				return syscall.EINVAL
			}
			if err := syscall.Truncate(procPath(fd), int64(sz)); err != nil {
				return err
			}
			if in.Valid&fuse.FATTR_KILL_SUIDGID != 0 {
				if mode, kill := killPrivMode(ctx, st.Mode); kill {
					_ = syscall.Chmod(procPath(fd), mode)
				}
			}
			return nil
		})
		if err != nil {
			return fs.ToErrno(err)
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
		err := t.atParent(rel, func(dirfd int, name string) error {
			return unix.UtimesNanoAt(dirfd, name, ts, unix.AT_SYMLINK_NOFOLLOW)
		})
		if err != nil {
			return fs.ToErrno(err)
		}
	}
	return 0
}

// emptyFolder reports whether the folder rel holds nothing.
func (t *Tree) emptyFolder(rel string) (bool, error) {
	fd, err := t.openAt(rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false, err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	names, err := f.Readdirnames(1)
	if err != nil && err != io.EOF {
		return false, err
	}
	return len(names) == 0, nil
}
