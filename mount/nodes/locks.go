package nodes

import (
	"context"
	"math/rand/v2"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// File locks are taken on the store's files, not kept in the kernel's FUSE inode: a session is served through
// FUSE until it is bound, and through the bind after, and a lock taken one way must stop one taken the other way
// (or through the store, by the CLI merging an agent's database, or by a container given the store's folder).
//
// flock(2) locks belong to an open file: each is taken on the request's own file, with flock (locks_flock.go,
// where an exclusive lock asked through a read-only descriptor is made shared). POSIX (fcntl) locks belong to a
// process: the kernel names it (the lock owner), and each owner gets a file of its own on the store's file,
// reopened through /proc/self/fd, on which its locks are taken as OFD locks (locks_posix.go). So two descriptors
// of one process share their locks, as POSIX has it, and two processes conflict. An owner's locks go when a file
// it locked through is released (closed by the last of its descriptors), as POSIX drops them at a close; its
// file is closed as soon as it holds no lock.
//
// A blocking request (F_SETLKW, flock without LOCK_NB) is retried without holding a thread of the daemon: a
// session's processes waiting on many locks must not use up the threads every other request needs. The tries
// back off to about a second, and a uid has only so many waiting at once in a session, and across sessions
// (locks_shares.go). A signal
// to the waiter interrupts it (FUSE_INTERRUPT ends the wait with EINTR).

const (
	// maxOwnersPerFile bounds the owners' files of one store file charged to one uid: a uid's processes could
	// otherwise make the daemon open a file for each of thousands of forks that share one descriptor. Per uid,
	// so that readers of another uid holding their 64 leave the file's own session room (locks_shares.go).
	maxOwnersPerFile = 64
	// firstLockWait and lockWait are the first and the longest pause between two tries of a blocking lock.
	firstLockWait = time.Millisecond
	lockWait      = time.Second
)

// inodeKey names a store file.
type inodeKey struct{ dev, ino uint64 }

// lockTable holds the owners' files and the flocks taken through the mount. One mutex guards it all, and
// Release holds it while it closes a file: neither a request's descriptor nor an owner's is closed (and its
// number given to another file) while a lock is taken on it.
type lockTable struct {
	mu     sync.Mutex
	owners map[inodeKey]map[uint64]*ownerFile // the file -> lock owner -> the owner's descriptor of it
	used   map[fs.FileHandle]map[owned]bool   // a request's file -> the owners holding locks taken through it
	// flocked: a request's file -> the store file it holds a flock on; readers: the flocks of read-only
	// descriptors on each store file (exclusive or not), which only this table keeps apart (locks_flock.go).
	flocked map[fs.FileHandle]inodeKey
	readers map[inodeKey]map[fs.FileHandle]bool
	files   shares          // owners' descriptors
	perFile map[fileUID]int // owners' descriptors of each store file, by the uid they are charged to
	waiters shares          // blocking requests waiting

	// keeper keeps copies of the owners' descriptors (locks_kept.go; nil: none), numbered from nextID; oldVia:
	// the owners adopted from a daemon before, by the file handle of it they came by; reopened: this daemon's
	// handles opened for a daemon before's, which the kernel knows.
	keeper   LockKeeper
	nextID   uint64
	oldVia   map[uint64]map[owned]bool
	reopened map[uint64]uint64
}

// fileUID names the owners' descriptors of one store file charged to one uid.
type fileUID struct {
	key inodeKey
	uid uint32
}

// init makes the maps and sets the limits left unset (t.mu held).
func (t *lockTable) init() {
	if t.owners != nil {
		return
	}
	t.owners, t.used = map[inodeKey]map[uint64]*ownerFile{}, map[fs.FileHandle]map[owned]bool{}
	t.flocked, t.readers = map[fs.FileHandle]inodeKey{}, map[inodeKey]map[fs.FileHandle]bool{}
	t.perFile, t.oldVia = map[fileUID]int{}, map[uint64]map[owned]bool{}
	if t.files.limits == (shareLimits{}) {
		t.files.limits = ownerFileLimits
	}
	if t.waiters.limits == (shareLimits{}) {
		t.waiters.limits = waiterLimits
	}
}

// file is the request's descriptor of the store file behind f and that file's identity (t.mu held).
func (t *lockTable) file(f fs.FileHandle) (int, inodeKey, syscall.Errno) {
	t.init()
	p, ok := f.(fs.FilePassthroughFder)
	if !ok {
		return -1, inodeKey{}, syscall.ENOLCK
	}
	fd, ok := p.PassthroughFd()
	if !ok {
		return -1, inodeKey{}, syscall.EBADF // released meanwhile
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return -1, inodeKey{}, fs.ToErrno(err)
	}
	return fd, inodeKey{st.Dev, st.Ino}, 0
}

// release drops the locks of every owner that holds locks taken through f (their descriptors are closed) and
// f's flock, then closes f.
func (t *lockTable) release(ctx context.Context, f fs.FileHandle) syscall.Errno {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.init()
	for o := range t.used[f] {
		if of := t.owners[o.key][o.owner]; of != nil {
			t.closeOwner(o.key, o.owner, of)
		}
	}
	delete(t.used, f)
	t.releaseFlock(f)
	if r, ok := f.(fs.FileReleaser); ok {
		return r.Release(ctx)
	}
	return 0
}

// busy reports whether errno says the lock is held by another.
func busy(errno syscall.Errno) bool {
	return errno == syscall.EAGAIN || errno == syscall.EACCES || errno == syscall.EWOULDBLOCK
}

// wait retries try until it no longer finds the lock busy, pausing longer each time up to lockWait; ctx ends it
// (the caller was interrupted). p's share of waiters bounds how many wait at once.
func (t *lockTable) wait(ctx context.Context, p payer, try func() syscall.Errno) syscall.Errno {
	t.mu.Lock()
	t.init()
	admitted := t.waiters.take(p)
	t.mu.Unlock()
	if !admitted {
		return syscall.ENOLCK
	}
	defer func() {
		t.mu.Lock()
		t.waiters.give(p)
		t.mu.Unlock()
	}()
	pause := firstLockWait
	timer := time.NewTimer(jittered(pause))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return syscall.EINTR
		case <-timer.C:
		}
		if errno := try(); !busy(errno) {
			return errno
		}
		pause = min(2*pause, lockWait)
		timer.Reset(jittered(pause))
	}
}

// jittered is d less up to a quarter, so waiters that started together do not all wake together.
func jittered(d time.Duration) time.Duration {
	return d - rand.N(d/4+1)
}

// Getlk reports a lock that would stop lk: another process's, through the mount or not.
func (n *Node) Getlk(ctx context.Context, f fs.FileHandle, owner uint64, lk *fuse.FileLock, flags uint32, out *fuse.FileLock) syscall.Errno {
	return n.tree.locks.getPosix(f, owner, lk, out)
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
	p := payerOf(ctx, n.id)
	fh, _ := fs.LockHandle(ctx)
	try := func() syscall.Errno { return n.tree.locks.setPosixVia(f, fh, owner, p, lk) }
	if flags&fuse.FUSE_LK_FLOCK != 0 {
		try = func() syscall.Errno { return n.tree.locks.flock(f, lk, n.tree.ReadOnly) }
	}
	errno := try()
	if !wait || !busy(errno) {
		return errno
	}
	return n.tree.locks.wait(ctx, p, try)
}

// Release drops the locks taken through f, then closes it.
func (n *Node) Release(ctx context.Context, f fs.FileHandle) syscall.Errno {
	return n.tree.locks.release(ctx, f)
}
