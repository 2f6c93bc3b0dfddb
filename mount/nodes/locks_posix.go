package nodes

import (
	"fmt"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// ownerFile is a POSIX lock owner's descriptor of one store file, on which its locks are OFD locks.
type ownerFile struct {
	fd    int
	held  byteRanges             // what the owner holds locked: the descriptor is closed once it is empty
	payer payer                  // whose share the descriptor is counted in
	via   map[fs.FileHandle]bool // the request files its locks were taken through (their release drops them)
	kept  uint64                 // the keeper's number for it (0: not kept; locks_kept.go)
	oldFh uint64                 // adopted: the file handle of the daemon before its locks came by (0: none)
}

// owned names an owner's locks on one store file.
type owned struct {
	key   inodeKey
	owner uint64
}

// setPosix takes or releases lk for owner on the store file behind f, without waiting. The owner's descriptor is
// opened (charged to p) for its first lock and closed once it holds none, so an owner that holds nothing costs
// the daemon nothing, whether it unlocked, was refused, or never got the lock. A request that would leave the
// owner more than maxRangesPerOwner ranges is refused (locks_ranges.go).
func (t *lockTable) setPosix(f fs.FileHandle, owner uint64, p payer, lk *fuse.FileLock) syscall.Errno {
	return t.setPosixVia(f, 0, owner, p, lk)
}

// setPosixVia is setPosix of a request that came by the kernel's file handle fh (0: not known), which the keeper
// is told with the owner's descriptor.
func (t *lockTable) setPosixVia(f fs.FileHandle, fh, owner uint64, p payer, lk *fuse.FileLock) syscall.Errno {
	t.mu.Lock()
	defer t.mu.Unlock()
	fd, key, errno := t.file(f)
	if errno != 0 {
		return errno
	}
	of := t.owners[key][owner]
	if of == nil {
		if lk.Typ == syscall.F_UNLCK {
			return 0 // it holds nothing here
		}
		if of, errno = t.openOwner(fd, key, owner, p); errno != 0 {
			return errno
		}
		t.keep(of, owner, fh) // before its first lock: a daemon killed from here on leaves it held
	}
	if of.held.lenAfter(lk) > maxRangesPerOwner {
		errno = syscall.ENOLCK
	} else {
		var flk syscall.Flock_t
		lk.ToFlockT(&flk)
		flk.Pid = 0 // OFD requests want 0
		errno = fs.ToErrno(syscall.FcntlFlock(uintptr(of.fd), unix.F_OFD_SETLK, &flk))
	}
	if errno == 0 {
		if lk.Typ == syscall.F_UNLCK {
			of.held.remove(lk.Start, lk.End)
		} else {
			of.held.add(lk.Start, lk.End)
			of.via[f] = true
			if t.used[f] == nil {
				t.used[f] = map[owned]bool{}
			}
			t.used[f][owned{key, owner}] = true
		}
	}
	if of.held.empty() {
		t.closeOwner(key, owner, of)
	}
	return errno
}

// lenAfter is how many ranges the owner would hold once lk is taken or released.
func (r byteRanges) lenAfter(lk *fuse.FileLock) int {
	if lk.Typ == syscall.F_UNLCK {
		return r.lenAfterRemove(lk.Start, lk.End)
	}
	return r.lenAfterAdd(lk.Start, lk.End)
}

// getPosix reports in out a lock that would stop owner's lk: another owner's, through the mount or not.
func (t *lockTable) getPosix(f fs.FileHandle, owner uint64, lk *fuse.FileLock, out *fuse.FileLock) syscall.Errno {
	t.mu.Lock()
	defer t.mu.Unlock()
	fd, key, errno := t.file(f)
	if errno != 0 {
		return errno
	}
	// An owner that holds nothing here has no descriptor; the request's own does as well, since no OFD lock
	// is ever taken on it.
	if of := t.owners[key][owner]; of != nil {
		fd = of.fd
	}
	var flk syscall.Flock_t
	lk.ToFlockT(&flk)
	flk.Pid = 0
	errno = fs.ToErrno(syscall.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &flk))
	out.FromFlockT(&flk)
	return errno
}

// openOwner opens owner's descriptor of the store file behind fd, within p's uid's per-file limit and p's share
// (t.mu held).
func (t *lockTable) openOwner(fd int, key inodeKey, owner uint64, p payer) (*ownerFile, syscall.Errno) {
	byOwner, mine := t.owners[key], fileUID{key, p.uid}
	if t.perFile[mine] >= maxOwnersPerFile || !t.files.take(p) {
		return nil, syscall.ENOLCK
	}
	// The same file, whatever its name is by now: not a path, which a session's process could swap
	// meanwhile. Read and write if the daemon may (a normal user's daemon may not, on a read-only file), else
	// one of the two: the kernel checked the caller's descriptor against the lock's type.
	self := fmt.Sprintf("/proc/self/fd/%d", fd)
	var ofd int
	var err error
	for _, mode := range []int{syscall.O_RDWR, syscall.O_RDONLY, syscall.O_WRONLY} {
		if ofd, err = syscall.Open(self, mode|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOCTTY, 0); err == nil {
			break
		}
	}
	if err != nil {
		t.files.give(p)
		return nil, fs.ToErrno(err)
	}
	if byOwner == nil {
		byOwner = map[uint64]*ownerFile{}
		t.owners[key] = byOwner
	}
	of := &ownerFile{fd: ofd, payer: p, via: map[fs.FileHandle]bool{}}
	byOwner[owner] = of
	t.perFile[mine]++
	return of, 0
}

// closeOwner closes owner's descriptor, which drops its locks, and forgets it (t.mu held).
func (t *lockTable) closeOwner(key inodeKey, owner uint64, of *ownerFile) {
	t.unkeep(key, owner, of)
	syscall.Close(of.fd)
	t.files.give(of.payer)
	if mine := (fileUID{key, of.payer.uid}); t.perFile[mine] <= 1 {
		delete(t.perFile, mine)
	} else {
		t.perFile[mine]--
	}
	for f := range of.via {
		delete(t.used[f], owned{key, owner})
		if len(t.used[f]) == 0 {
			delete(t.used, f)
		}
	}
	byOwner := t.owners[key]
	delete(byOwner, owner)
	if len(byOwner) == 0 {
		delete(t.owners, key)
	}
}
