package nodes

import (
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// An exclusive flock asked through a read-only descriptor (every descriptor of a read-only mount, or of a
// read-only bind of the mount such as a read-only CSI publish) is made shared on the store's file, not refused.
//
// Made shared, a reader makes a writer elsewhere (the host, a bind, a container, another mount) wait only as any
// reader's shared lock does, which it could take anyway; it no longer locks out the other readers, nor holds an
// exclusive lock on a file it may not write. Refused (EBADF, as POSIX refuses F_WRLCK on a read-only descriptor)
// would not take that shared lock from it either, and would break flock(1), which opens its lock file
// read-only: every `flock -x lockfile cmd` through the mount would fail.
//
// So that scripts serialising with `flock -x` through the mount still exclude each other, the table keeps the
// read-only descriptors' flocks of each store file apart itself: an exclusive one stops any other read-only
// descriptor's flock through this mount, and a shared one stops their exclusive ones. What is given up: such
// an exclusive lock does not stop a shared flock taken elsewhere, or through a writable descriptor.

// flock takes or releases f's flock lk on its store file, without waiting. readOnly: the mount is read-only.
func (t *lockTable) flock(f fs.FileHandle, lk *fuse.FileLock, readOnly bool) syscall.Errno {
	t.mu.Lock()
	defer t.mu.Unlock()
	fd, key, errno := t.file(f)
	if errno != 0 {
		return errno
	}
	if lk.Typ == syscall.F_UNLCK {
		errno := fs.ToErrno(unix.Flock(fd, unix.LOCK_UN))
		t.forgetFlock(f)
		return errno
	}
	exclusive := lk.Typ == syscall.F_WRLCK
	reader := readOnly || !writable(fd)
	op := unix.LOCK_SH
	if exclusive && !reader {
		op = unix.LOCK_EX
	}
	if reader {
		for g, ex := range t.readers[key] {
			if g != f && (exclusive || ex) {
				return syscall.EWOULDBLOCK
			}
		}
	}
	if err := unix.Flock(fd, op|unix.LOCK_NB); err != nil {
		t.forgetFlock(f) // a conversion refused has dropped the lock f held
		return fs.ToErrno(err)
	}
	t.flocked[f] = key
	if reader {
		if t.readers[key] == nil {
			t.readers[key] = map[fs.FileHandle]bool{}
		}
		t.readers[key][f] = exclusive
	}
	return 0
}

// releaseFlock drops f's flock before f is closed (t.mu held): a FUSE filesystem serving the store may release
// a closed file's flock only later.
func (t *lockTable) releaseFlock(f fs.FileHandle) {
	if _, ok := t.flocked[f]; !ok {
		return
	}
	if p, ok := f.(fs.FilePassthroughFder); ok {
		if fd, ok := p.PassthroughFd(); ok {
			_ = unix.Flock(fd, unix.LOCK_UN)
		}
	}
	t.forgetFlock(f)
}

// forgetFlock forgets f's flock (t.mu held).
func (t *lockTable) forgetFlock(f fs.FileHandle) {
	key, ok := t.flocked[f]
	if !ok {
		return
	}
	delete(t.flocked, f)
	delete(t.readers[key], f)
	if len(t.readers[key]) == 0 {
		delete(t.readers, key)
	}
}

// writable reports whether descriptor fd was opened for writing.
func writable(fd int) bool {
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	return err == nil && fl&unix.O_ACCMODE != unix.O_RDONLY
}
