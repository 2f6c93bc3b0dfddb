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

// do runs fn with owner's descriptor of the store file behind f, made on its first lock through f. It holds
// t.mu throughout, as Release does while it closes f: neither f's descriptor nor the owner's is closed (and its
// number given to another file) under fn.
func (t *lockTable) do(f fs.FileHandle, owner uint64, fn func(ofd int) syscall.Errno) syscall.Errno {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := f.(fs.FilePassthroughFder)
	if !ok {
		return syscall.ENOLCK
	}
	fd, ok := p.PassthroughFd()
	if !ok {
		return syscall.EBADF // released meanwhile
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return fs.ToErrno(err)
	}
	key := inodeKey{st.Dev, st.Ino}
	if t.owners == nil {
		t.owners, t.used = map[inodeKey]map[uint64]int{}, map[fs.FileHandle][]owned{}
	}
	byOwner := t.owners[key]
	ofd, ok := byOwner[owner]
	if !ok {
		if len(byOwner) >= maxOwnersPerFile || t.files >= maxOwnerFiles {
			return syscall.ENOLCK
		}
		// The same file, whatever its name is by now: not a path, which a session's process could swap
		// meanwhile. Read and write if the daemon may (a normal user's daemon may not, on a read-only file), else
		// one of the two: the kernel checked the caller's descriptor against the lock's type.
		self := fmt.Sprintf("/proc/self/fd/%d", fd)
		var err error
		for _, mode := range []int{syscall.O_RDWR, syscall.O_RDONLY, syscall.O_WRONLY} {
			if ofd, err = syscall.Open(self, mode|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOCTTY, 0); err == nil {
				break
			}
		}
		if err != nil {
			return fs.ToErrno(err)
		}
		if byOwner == nil {
			byOwner = map[uint64]int{}
			t.owners[key] = byOwner
		}
		byOwner[owner] = ofd
		t.files++
	}
	t.note(f, key, owner)
	return fn(ofd)
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

// release drops the locks of every owner that locked through f (their descriptors are closed), then f.
func (t *lockTable) release(ctx context.Context, f fs.FileHandle) syscall.Errno {
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
	if r, ok := f.(fs.FileReleaser); ok {
		return r.Release(ctx)
	}
	return 0
}

// Getlk reports a lock that would stop lk: another process's, through the mount or not.
func (n *Node) Getlk(ctx context.Context, f fs.FileHandle, owner uint64, lk *fuse.FileLock, flags uint32, out *fuse.FileLock) syscall.Errno {
	return n.tree.locks.do(f, owner, func(ofd int) syscall.Errno {
		var flk syscall.Flock_t
		lk.ToFlockT(&flk)
		flk.Pid = 0 // OFD requests want 0
		errno := fs.ToErrno(syscall.FcntlFlock(uintptr(ofd), unix.F_OFD_GETLK, &flk))
		out.FromFlockT(&flk)
		return errno
	})
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
	try := func() syscall.Errno {
		var flk syscall.Flock_t
		lk.ToFlockT(&flk)
		flk.Pid = 0
		return n.tree.locks.do(f, owner, func(ofd int) syscall.Errno {
			return fs.ToErrno(syscall.FcntlFlock(uintptr(ofd), unix.F_OFD_SETLK, &flk))
		})
	}
	if flags&fuse.FUSE_LK_FLOCK != 0 {
		// The file's own lock, taken on its descriptor, which go-fuse keeps open while it is used.
		l, ok := f.(fs.FileSetlker)
		if !ok {
			return syscall.ENOLCK
		}
		try = func() syscall.Errno { return l.Setlk(ctx, owner, lk, fuse.FUSE_LK_FLOCK) }
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

// Release drops the locks taken through f, then closes it.
func (n *Node) Release(ctx context.Context, f fs.FileHandle) syscall.Errno {
	return n.tree.locks.release(ctx, f)
}
