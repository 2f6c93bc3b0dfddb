package nodes

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// copyingKeeper plays the holder: it keeps a copy of each owner's descriptor (a dup: the same open file
// description, as SCM_RIGHTS gives), and closes it when told.
type copyingKeeper struct {
	kept    map[uint64]KeptOwner
	copies  map[uint64]int
	dropped []uint64
}

func newCopyingKeeper() *copyingKeeper {
	return &copyingKeeper{kept: map[uint64]KeptOwner{}, copies: map[uint64]int{}}
}

func (k *copyingKeeper) Keep(o KeptOwner, fd int) error {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return err
	}
	k.kept[o.ID], k.copies[o.ID] = o, dup
	return nil
}

func (k *copyingKeeper) Drop(id uint64) {
	if fd, ok := k.copies[id]; ok {
		unix.Close(fd)
	}
	delete(k.copies, id)
	delete(k.kept, id)
	k.dropped = append(k.dropped, id)
}

// otherLock tries a write lock of byte start on path from a descriptor of its own (another owner), and lets it go.
func otherLock(t *testing.T, path string, start int64) error {
	t.Helper()
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	lk := unix.Flock_t{Type: unix.F_WRLCK, Start: start, Len: 1}
	if err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk); err != nil {
		return err
	}
	lk.Type = unix.F_UNLCK
	require.NoError(t, unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk))
	return nil
}

// An owner's descriptor goes to the keeper before its first lock, with the handle it came by; the owner's unlock
// is made on the descriptor before it is closed, so the keeper's copy holds nothing the owner let go.
func TestKeptOwnerUnlockedBeforeClose(t *testing.T) {
	k := newCopyingKeeper()
	tbl := &lockTable{keeper: k}
	path := filepath.Join(t.TempDir(), "f")
	f := request(t, tbl, path, syscall.O_RDWR)
	p := payer{"s", 1000}

	require.Zero(t, tbl.setPosixVia(f, 42, 7, p, posixLock(syscall.F_WRLCK, 0, 9)))
	require.Len(t, k.kept, 1)
	for _, o := range k.kept {
		assert.Equal(t, KeptOwner{ID: o.ID, Owner: 7, Fh: 42, Session: "s", UID: 1000}, o)
	}
	assert.ErrorIs(t, otherLock(t, path, 0), unix.EAGAIN)
	require.Zero(t, tbl.setPosixVia(f, 42, 7, p, posixLock(syscall.F_UNLCK, 0, 9)))
	assert.Empty(t, k.kept, "the keeper was told to close its copy")
	assert.NoError(t, otherLock(t, path, 0), "the unlock let the lock go")

	require.Zero(t, tbl.setPosixVia(f, 42, 7, p, posixLock(syscall.F_WRLCK, 0, 0)))
	for _, fd := range k.copies { // the keeper slow to close its copy: the release unlocked it already
		dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		require.NoError(t, err)
		defer unix.Close(dup)
	}
	require.Zero(t, tbl.release(context.Background(), f))
	assert.NoError(t, otherLock(t, path, 0), "a release unlocks before it closes, whoever keeps a copy")
	assert.Len(t, k.dropped, 2)
}

// A daemon killed leaves its owners' locks held by the keeper's copies; the next daemon adopts them with the
// ranges the kernel lists: the owner's own requests work on, GETLK names its lock, its unlock lets go, and the
// release of the handle it came by lets go of the rest. An adopted descriptor that holds nothing is closed.
func TestAdoptedOwnerKeepsItsLock(t *testing.T) {
	k := newCopyingKeeper()
	before := &lockTable{keeper: k}
	dir := t.TempDir()
	path, idle := filepath.Join(dir, "f"), filepath.Join(dir, "idle")
	f := request(t, before, path, syscall.O_RDWR)
	g := request(t, before, idle, syscall.O_RDWR)
	p := payer{"s", 1000}
	require.Zero(t, before.setPosixVia(f, 42, 7, p, posixLock(syscall.F_WRLCK, 0, 4)))
	require.Zero(t, before.setPosixVia(f, 42, 7, p, posixLock(syscall.F_RDLCK, 10, 1<<63-1)))
	require.Zero(t, before.setPosixVia(g, 43, 7, p, posixLock(syscall.F_WRLCK, 0, 0)))
	var idleID uint64
	for id, o := range k.kept {
		if o.Fh == 43 {
			idleID = id
		}
	}
	// The daemon unlocked g's owner and died before it said so: the keeper's copy holds nothing.
	idleOF := before.owners[func() inodeKey { _, key, _ := before.file(g); return key }()][7]
	_ = syscall.FcntlFlock(uintptr(idleOF.fd), unix.F_OFD_SETLK, &syscall.Flock_t{Type: syscall.F_UNLCK})
	for _, byOwner := range before.owners { // killed: its own descriptors close, unlocking nothing
		for _, of := range byOwner {
			syscall.Close(of.fd)
		}
	}
	before.owners = map[inodeKey]map[uint64]*ownerFile{} // and its table goes with it
	assert.ErrorIs(t, otherLock(t, path, 0), unix.EAGAIN, "held by the keeper's copy")
	assert.ErrorIs(t, otherLock(t, path, 1000), unix.EAGAIN)

	after := &lockTable{keeper: k}
	var owners []KeptOwner
	var fds []int
	for id, o := range k.kept {
		owners, fds = append(owners, o), append(fds, k.copies[id])
	}
	k.copies = map[uint64]int{} // handed over: the keeper's copies are the daemon's now, as SCM_RIGHTS makes them
	require.Equal(t, 1, after.adopt(owners, fds))
	assert.Contains(t, k.dropped, idleID, "the descriptor that held nothing is closed")
	_, key, _ := after.file(f)
	of := after.owners[key][7]
	require.NotNil(t, of)
	assert.Equal(t, byteRanges{{0, 4}, {10, 1<<63 - 1}}, of.held, "the ranges the kernel lists")

	var out fuse.FileLock
	require.Zero(t, after.getPosix(f, 8, posixLock(syscall.F_WRLCK, 0, 0), &out))
	assert.Equal(t, uint32(syscall.F_WRLCK), out.Typ, "GETLK names the adopted owner's lock")
	require.Zero(t, after.setPosixVia(f, 99, 7, p, posixLock(syscall.F_UNLCK, 0, 4)))
	assert.NoError(t, otherLock(t, path, 0), "the owner's unlock lets go")
	assert.ErrorIs(t, otherLock(t, path, 1000), unix.EAGAIN, "its other lock stays")
	after.releaseOld(42)
	assert.NoError(t, otherLock(t, path, 1000), "the release of the handle it came by lets go")
	assert.Empty(t, after.owners)
	assert.Empty(t, after.oldVia)
	assert.Zero(t, after.files.total)
}

// An owner whose first lock comes by a handle opened again for a daemon before's is kept as having come by that
// old handle: the kernel releases the old one.
func TestReopenedHandleKeptAsTheOld(t *testing.T) {
	k := newCopyingKeeper()
	tree := &Tree{}
	tree.KeepLocks(k)
	tree.ReopenedHandle(5000, 42)
	f := request(t, &tree.locks, filepath.Join(t.TempDir(), "f"), syscall.O_RDWR)
	require.Zero(t, tree.locks.setPosixVia(f, 5000, 7, payer{"s", 1}, posixLock(syscall.F_WRLCK, 0, 0)))
	for _, o := range k.kept {
		assert.Equal(t, uint64(42), o.Fh)
	}
	tree.ReleaseOldHandle(42)
	assert.Empty(t, tree.locks.reopened)
}

// The kernel's fdinfo lines of a descriptor's OFD locks are read back as ranges.
func TestHeldByDescriptor(t *testing.T) {
	fd, err := unix.Open(filepath.Join(t.TempDir(), "f"), unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	require.NoError(t, err)
	defer unix.Close(fd)
	held, err := heldByDescriptor(fd)
	require.NoError(t, err)
	assert.True(t, held.empty())
	for _, lk := range []unix.Flock_t{{Type: unix.F_WRLCK, Start: 3, Len: 2}, {Type: unix.F_RDLCK, Start: 100, Len: 0}} {
		require.NoError(t, unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk))
	}
	held, err = heldByDescriptor(fd)
	require.NoError(t, err)
	assert.Equal(t, byteRanges{{3, 4}, {100, 1<<63 - 1}}, held)
}
