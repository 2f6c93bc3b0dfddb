package nodes

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// File locks are taken on the store's files, not kept in the kernel's FUSE inode: a session is served through
// FUSE until it is bound, and through the bind after, and a lock taken one way must stop one taken the other way
// (or through the store, by the CLI merging an agent's database, or by a container given the store's folder).
//
// flock(2) locks belong to an open file: each is taken on the request's own file, with flock. POSIX (fcntl)
// locks belong to a process: the kernel names it (the lock owner), and each owner gets a file of its own on the
// store's file, reopened through /proc/self/fd, on which its locks are taken as OFD locks. So two descriptors of
// one process share their locks, as POSIX has it, and two processes conflict. An owner's locks go when a file it
// locked through is released (closed by the last of its descriptors), as POSIX drops them at a close.
//
// A blocking request (F_SETLKW, flock without LOCK_NB) is retried without holding a thread of the daemon: a
// session's processes waiting on many locks must not use up the threads every other request needs. A signal to
// the waiter interrupts it (FUSE_INTERRUPT ends the wait with EINTR).

// maxOwnersPerFile and maxOwnerFiles bound the files the daemon opens for owners: a session's processes could
// otherwise make it open a file for each of thousands of forks that share one descriptor.
const (
	maxOwnersPerFile = 64
	maxOwnerFiles    = 8192
)

// lockWait is the longest pause between two tries of a blocking lock.
const lockWait = 20 * time.Millisecond

// inodeKey names a store file.
type inodeKey struct{ dev, ino uint64 }

// lockTable holds the owners' files.
type lockTable struct {
	mu     sync.Mutex
	owners map[inodeKey]map[uint64]int // the file -> lock owner -> the owner's descriptor of it
	used   map[fs.FileHandle][]owned   // a request's file -> the owners that locked through it
	files  int                         // descriptors held for owners
}

type owned struct {
	key   inodeKey
	owner uint64
}

// handleFd is the store file's descriptor behind a request's file.
func handleFd(f fs.FileHandle) (int, bool) {
	if p, ok := f.(fs.FilePassthroughFder); ok {
		return p.PassthroughFd()
	}
	return -1, false
}

// ownerFd is owner's descriptor of the store file fd is open on, made on its first lock through f.
func (t *lockTable) ownerFd(f fs.FileHandle, fd int, owner uint64) (int, syscall.Errno) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return -1, fs.ToErrno(err)
	}
	key := inodeKey{st.Dev, st.Ino}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.owners == nil {
		t.owners, t.used = map[inodeKey]map[uint64]int{}, map[fs.FileHandle][]owned{}
	}
	byOwner := t.owners[key]
	if ofd, ok := byOwner[owner]; ok {
		t.note(f, key, owner)
		return ofd, 0
	}
	if len(byOwner) >= maxOwnersPerFile || t.files >= maxOwnerFiles {
		return -1, syscall.ENOLCK
	}
	// The same file, whatever its name is by now: not a path, which a session's process could swap meanwhile.
	// Read and write whatever the caller's descriptor allows: the kernel checked it against the lock's type.
	self := fmt.Sprintf("/proc/self/fd/%d", fd)
	ofd, err := syscall.Open(self, syscall.O_RDWR|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOCTTY, 0)
	if err != nil {
		ofd, err = syscall.Open(self, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOCTTY, 0)
	}
	if err != nil {
		return -1, fs.ToErrno(err)
	}
	if byOwner == nil {
		byOwner = map[uint64]int{}
		t.owners[key] = byOwner
	}
	byOwner[owner] = ofd
	t.files++
	t.note(f, key, owner)
	return ofd, 0
}

// note records that owner locked through f (t.mu held).
func (t *lockTable) note(f fs.FileHandle, key inodeKey, owner uint64) {
	for _, o := range t.used[f] {
		if o == (owned{key, owner}) {
			return
		}
	}
	t.used[f] = append(t.used[f], owned{key, owner})
}

// released drops the locks of every owner that locked through f, which is being released: their descriptors
// are closed.
func (t *lockTable) released(f fs.FileHandle) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, o := range t.used[f] {
		byOwner := t.owners[o.key]
		if ofd, ok := byOwner[o.owner]; ok {
			syscall.Close(ofd)
			t.files--
			delete(byOwner, o.owner)
			if len(byOwner) == 0 {
				delete(t.owners, o.key)
			}
		}
	}
	delete(t.used, f)
}

// Getlk reports a lock that would stop lk: another process's, through the mount or not.
func (n *Node) Getlk(ctx context.Context, f fs.FileHandle, owner uint64, lk *fuse.FileLock, flags uint32, out *fuse.FileLock) syscall.Errno {
	fd, ok := handleFd(f)
	if !ok {
		return syscall.ENOLCK
	}
	ofd, errno := n.tree.locks.ownerFd(f, fd, owner)
	if errno != 0 {
		return errno
	}
	var flk syscall.Flock_t
	lk.ToFlockT(&flk)
	flk.Pid = 0 // OFD requests want 0
	errno = fs.ToErrno(syscall.FcntlFlock(uintptr(ofd), unix.F_OFD_GETLK, &flk))
	out.FromFlockT(&flk)
	return errno
}

// Setlk takes or releases lk without waiting.
func (n *Node) Setlk(ctx context.Context, f fs.FileHandle, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return n.setlk(ctx, f, owner, lk, flags, false)
}

// Setlkw takes lk, waiting for it; a signal to the caller ends the wait.
func (n *Node) Setlkw(ctx context.Context, f fs.FileHandle, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return n.setlk(ctx, f, owner, lk, flags, true)
}

func (n *Node) setlk(ctx context.Context, f fs.FileHandle, owner uint64, lk *fuse.FileLock, flags uint32, wait bool) syscall.Errno {
	fd, ok := handleFd(f)
	if !ok {
		return syscall.ENOLCK
	}
	try := func() syscall.Errno { return flockTry(fd, lk) }
	if flags&fuse.FUSE_LK_FLOCK == 0 {
		ofd, errno := n.tree.locks.ownerFd(f, fd, owner)
		if errno != 0 {
			return errno
		}
		var flk syscall.Flock_t
		lk.ToFlockT(&flk)
		flk.Pid = 0
		try = func() syscall.Errno { return fs.ToErrno(syscall.FcntlFlock(uintptr(ofd), unix.F_OFD_SETLK, &flk)) }
	}
	pause := time.Millisecond
	for {
		errno := try()
		if !wait || (errno != syscall.EAGAIN && errno != syscall.EACCES && errno != syscall.EWOULDBLOCK) {
			return errno
		}
		select {
		case <-ctx.Done():
			return syscall.EINTR
		case <-time.After(pause):
		}
		pause = min(2*pause, lockWait)
	}
}

// flockTry takes or releases a flock(2) lock on fd without waiting.
func flockTry(fd int, lk *fuse.FileLock) syscall.Errno {
	var op int
	switch lk.Typ {
	case syscall.F_RDLCK:
		op = syscall.LOCK_SH | syscall.LOCK_NB
	case syscall.F_WRLCK:
		op = syscall.LOCK_EX | syscall.LOCK_NB
	case syscall.F_UNLCK:
		op = syscall.LOCK_UN
	default:
		return syscall.EINVAL
	}
	return fs.ToErrno(syscall.Flock(fd, op))
}

// Release drops the locks taken through f, then closes it.
func (n *Node) Release(ctx context.Context, f fs.FileHandle) syscall.Errno {
	n.tree.locks.released(f)
	if r, ok := f.(fs.FileReleaser); ok {
		return r.Release(ctx)
	}
	return 0
}
