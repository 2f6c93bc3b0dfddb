package nodes

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

// POSIX locks outlive the daemon. An owner's locks are OFD locks on its own descriptor
// (locks_posix.go), and an OFD lock lasts while any copy of its open file description is open. So a mount whose
// connection a holder keeps hands the holder a copy of each owner's descriptor before the owner's first lock is
// taken (LockKeeper), and unlocks the owner explicitly before it closes its own (the holder's copy would keep what
// the owner let go). A daemon killed leaves the owners' locks held by the holder's copies; the next daemon is
// given them and adopts them (AdoptLockOwners): each stays the same owner's, and goes when the owner unlocks it
// or closes a file it locked through. The locks each copy holds are read back from the kernel (fdinfo), not from
// the daemon before: what it last said may be behind what it did.

// LockKeeper keeps, outside the daemon, a copy of each POSIX lock owner's descriptor (the mount's holder).
type LockKeeper interface {
	// Keep hands over a copy of owner o's descriptor fd. It returns once the copy is on its way: a daemon killed
	// after it leaves the copy to the keeper. An error says it was not kept (the keeper is gone): the owner's
	// locks are taken all the same, and go with this daemon, as they would without a keeper.
	Keep(o KeptOwner, fd int) error
	// Drop: owner id's descriptor is unlocked and closed; the keeper closes its copy.
	Drop(id uint64)
}

// KeptOwner names a lock owner's descriptor the keeper keeps.
type KeptOwner struct {
	ID      uint64 // the daemons' number for it
	Owner   uint64 // the kernel's lock owner
	Fh      uint64 // the kernel's file handle its first lock came through: its release drops the owner's locks
	Session string // the share its descriptor is charged to
	UID     uint32
}

// KeepLocks makes the tree hand each lock owner's descriptor to k from now on.
func (t *Tree) KeepLocks(k LockKeeper) {
	t.locks.mu.Lock()
	t.locks.keeper = k
	// Numbered apart from any daemon's before (its owners the keeper still keeps, adopted or not): by this
	// process's id, and past what is adopted (AdoptLockOwners).
	t.locks.nextID = max(t.locks.nextID, uint64(os.Getpid())<<32)
	t.locks.mu.Unlock()
}

// AdoptLockOwners takes over the owners' descriptors fds (owners[i]'s is fds[i]) kept for a daemon before this
// one. Each is charged to its share (over its limit if need be: its locks are held already); one that holds no
// lock any more (its daemon unlocked it and died before it said so), or another copy of an owner adopted
// already, is dropped. It returns how many were adopted.
func (t *Tree) AdoptLockOwners(owners []KeptOwner, fds []int) int { return t.locks.adopt(owners, fds) }

func (l *lockTable) adopt(owners []KeptOwner, fds []int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	adopted := 0
	for i, o := range owners {
		l.nextID = max(l.nextID, o.ID)
		if i >= len(fds) {
			break
		}
		fd := fds[i]
		var st syscall.Stat_t
		held, err := heldByDescriptor(fd)
		if err == nil {
			err = syscall.Fstat(fd, &st)
		}
		key := inodeKey{st.Dev, st.Ino}
		if err != nil || held.empty() || l.owners[key][o.Owner] != nil {
			l.dropKept(o.ID, fd)
			continue
		}
		p := payer{o.Session, o.UID}
		l.files.force(p)
		l.perFile[fileUID{key, p.uid}]++
		if l.owners[key] == nil {
			l.owners[key] = map[uint64]*ownerFile{}
		}
		l.owners[key][o.Owner] = &ownerFile{fd: fd, held: held, payer: p, via: map[fs.FileHandle]bool{}, kept: o.ID, oldFh: o.Fh}
		if o.Fh != 0 {
			if l.oldVia[o.Fh] == nil {
				l.oldVia[o.Fh] = map[owned]bool{}
			}
			l.oldVia[o.Fh][owned{key, o.Owner}] = true
		}
		adopted++
	}
	return adopted
}

// ReleaseOldHandle drops the locks of the owners adopted from a daemon before that came by file handle fh, which
// the kernel released (fh: that daemon's number).
func (t *Tree) ReleaseOldHandle(fh uint64) { t.locks.releaseOld(fh) }

func (l *lockTable) releaseOld(fh uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for o := range l.oldVia[fh] {
		if of := l.owners[o.key][o.owner]; of != nil {
			l.closeOwner(o.key, o.owner, of)
		}
	}
	delete(l.oldVia, fh)
	for now, old := range l.reopened {
		if old == fh {
			delete(l.reopened, now)
		}
	}
}

// ReopenedHandle says that file handle now, of this daemon, was opened for fh, a daemon before's: an owner whose
// first lock comes by now is kept as having come by fh, the handle the kernel will release.
func (t *Tree) ReopenedHandle(now, fh uint64) {
	l := &t.locks
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reopened == nil {
		l.reopened = map[uint64]uint64{}
	}
	l.reopened[now] = fh
}

// keep hands of's descriptor to the keeper, if there is one (t.mu held).
func (t *lockTable) keep(of *ownerFile, owner, fh uint64) {
	if t.keeper == nil {
		return
	}
	if old, ok := t.reopened[fh]; ok {
		fh = old
	}
	t.nextID++
	if t.keeper.Keep(KeptOwner{ID: t.nextID, Owner: owner, Fh: fh, Session: of.payer.session, UID: of.payer.uid}, of.fd) == nil {
		of.kept = t.nextID
	}
}

// unkeep unlocks owner's descriptor of before it is closed, and tells the keeper to close its copy (t.mu held).
func (t *lockTable) unkeep(key inodeKey, owner uint64, of *ownerFile) {
	if of.kept == 0 {
		return
	}
	whole := syscall.Flock_t{Type: syscall.F_UNLCK}
	_ = syscall.FcntlFlock(uintptr(of.fd), unix.F_OFD_SETLK, &whole)
	if t.keeper != nil {
		t.keeper.Drop(of.kept)
	}
	if byOwner, ok := t.oldVia[of.oldFh]; ok {
		delete(byOwner, owned{key, owner})
		if len(byOwner) == 0 {
			delete(t.oldVia, of.oldFh)
		}
	}
}

// dropKept closes an adopted descriptor not taken, unlocked first, and tells the keeper (t.mu held).
func (t *lockTable) dropKept(id uint64, fd int) {
	whole := syscall.Flock_t{Type: syscall.F_UNLCK}
	_ = syscall.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &whole)
	syscall.Close(fd)
	if t.keeper != nil {
		t.keeper.Drop(id)
	}
}

// heldByDescriptor reads the byte ranges the OFD locks of descriptor fd hold, as the kernel lists them in its
// fdinfo ("lock:\t1: OFDLCK  ADVISORY  WRITE -1 00:2b:1234 0 EOF").
func heldByDescriptor(fd int) (byteRanges, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", fd))
	if err != nil {
		return nil, err
	}
	var held byteRanges
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "lock:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 8 || f[1] != "OFDLCK" {
			continue
		}
		start, err := strconv.ParseUint(f[6], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("fdinfo lock line %q", line)
		}
		end := uint64(1<<63 - 1)
		if f[7] != "EOF" {
			if end, err = strconv.ParseUint(f[7], 10, 64); err != nil {
				return nil, fmt.Errorf("fdinfo lock line %q", line)
			}
		}
		held.add(start, end)
	}
	return held, nil
}
