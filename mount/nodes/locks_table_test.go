package nodes

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// request opens path as a FUSE request's file (the store file behind it), released at the test's end.
func request(t *testing.T, tbl *lockTable, path string, flags int) fs.FileHandle {
	t.Helper()
	fd, err := syscall.Open(path, flags|syscall.O_CREAT|syscall.O_CLOEXEC, 0o644)
	require.NoError(t, err)
	f := fs.NewLoopbackFile(fd)
	t.Cleanup(func() { tbl.release(context.Background(), f) })
	return f
}

func posixLock(typ uint32, start, end uint64) *fuse.FileLock {
	return &fuse.FileLock{Start: start, End: end, Typ: typ}
}

// An owner's descriptor lives only while the owner holds a lock: an unlock, a refusal or a question leaves
// nothing open behind.
func TestOwnerFileClosedOnceIdle(t *testing.T) {
	tbl := &lockTable{}
	f := request(t, tbl, filepath.Join(t.TempDir(), "f"), syscall.O_RDWR)
	p := payer{"s", 1000}
	open := func() int { tbl.mu.Lock(); defer tbl.mu.Unlock(); return tbl.files.total }

	require.Zero(t, tbl.setPosix(f, 1, p, posixLock(syscall.F_WRLCK, 0, 9)))
	assert.Equal(t, 1, open())
	require.Zero(t, tbl.setPosix(f, 1, p, posixLock(syscall.F_UNLCK, 0, 4)))
	assert.Equal(t, 1, open(), "bytes 5-9 are still held")
	require.Zero(t, tbl.setPosix(f, 1, p, posixLock(syscall.F_UNLCK, 5, 9)))
	assert.Zero(t, open(), "nothing held, the descriptor is closed")
	assert.Empty(t, tbl.owners)
	assert.Empty(t, tbl.used)

	require.Zero(t, tbl.setPosix(f, 1, p, posixLock(syscall.F_WRLCK, 0, 0)))
	assert.Equal(t, syscall.EAGAIN, tbl.setPosix(f, 2, p, posixLock(syscall.F_WRLCK, 0, 0)))
	assert.Equal(t, 1, open(), "the refused owner keeps no descriptor")
	var out fuse.FileLock
	require.Zero(t, tbl.getPosix(f, 2, posixLock(syscall.F_RDLCK, 0, 0), &out))
	assert.Equal(t, uint32(syscall.F_WRLCK), out.Typ, "owner 1's lock stops owner 2")
	require.Zero(t, tbl.getPosix(f, 1, posixLock(syscall.F_WRLCK, 0, 0), &out))
	assert.Equal(t, uint32(syscall.F_UNLCK), out.Typ, "an owner's own lock does not stop it")
	require.Zero(t, tbl.setPosix(f, 3, p, posixLock(syscall.F_UNLCK, 0, 1<<63-1)))
	assert.Equal(t, 1, open(), "questions and unlocks of owners holding nothing open nothing")

	require.Zero(t, tbl.release(context.Background(), f))
	assert.Zero(t, open(), "a release drops the locks taken through the file")
	assert.Empty(t, tbl.used)
}

// One uid fills only its own share of owners' descriptors in a session, then its own across sessions; another
// uid locking the same session's file has its own, until the session's share is used up.
func TestOwnerFilesShared(t *testing.T) {
	tbl := &lockTable{files: shares{limits: shareLimits{sessionUID: 2, session: 3, uid: 3, total: 5}}}
	dir := t.TempDir()
	f := request(t, tbl, filepath.Join(dir, "f"), syscall.O_RDWR)
	owner := uint64(0)
	lock := func(p payer) syscall.Errno {
		owner++
		return tbl.setPosix(f, owner, p, posixLock(syscall.F_RDLCK, 0, 0))
	}
	a, a2, aOther, b, c := payer{"a", 1}, payer{"a2", 1}, payer{"a", 2}, payer{"b", 2}, payer{"c", 3}
	require.Zero(t, lock(a))
	require.Zero(t, lock(a))
	assert.Equal(t, syscall.ENOLCK, lock(a), "uid 1 used up its share in session a")
	require.Zero(t, lock(aOther), "another uid on session a's file")
	assert.Equal(t, syscall.ENOLCK, lock(payer{"a", 7}), "session a used up its share, whatever uid asks")
	require.Zero(t, lock(a2), "the same uid in another session")
	assert.Equal(t, syscall.ENOLCK, lock(a2), "uid 1 used up its share")
	require.Zero(t, lock(b), "another uid's session")
	assert.Equal(t, syscall.ENOLCK, lock(c), "the daemon's are all used")
	require.Zero(t, tbl.setPosix(f, 1, a, posixLock(syscall.F_UNLCK, 0, 0)))
	require.Zero(t, lock(c), "given back by an unlock")
}

// The owners' descriptors of one store file are bounded per uid: one uid's readers holding all theirs leave
// another uid (the file's own session's) room on the same file.
func TestOwnersPerFileByUID(t *testing.T) {
	tbl := &lockTable{}
	dir := t.TempDir()
	f, g := request(t, tbl, filepath.Join(dir, "f"), syscall.O_RDWR), request(t, tbl, filepath.Join(dir, "g"), syscall.O_RDWR)
	attacker, victim := payer{"vic", 65534}, payer{"vic", 0}
	for owner := uint64(1); owner <= maxOwnersPerFile; owner++ {
		require.Zero(t, tbl.setPosix(f, owner, attacker, posixLock(syscall.F_RDLCK, 0, 0)))
	}
	assert.Equal(t, syscall.ENOLCK, tbl.setPosix(f, 1000, attacker, posixLock(syscall.F_RDLCK, 0, 0)),
		"one uid has only so many owners on a file")
	require.Zero(t, tbl.setPosix(g, 1000, attacker, posixLock(syscall.F_RDLCK, 0, 0)), "and so many on each file")
	require.Zero(t, tbl.setPosix(f, 2000, victim, posixLock(syscall.F_RDLCK, 0, 0)), "another uid on the same file")
	require.Zero(t, tbl.setPosix(f, 1, attacker, posixLock(syscall.F_UNLCK, 0, 0)))
	require.Zero(t, tbl.setPosix(f, 1000, attacker, posixLock(syscall.F_RDLCK, 0, 0)), "given back by an unlock")

	require.Zero(t, tbl.release(context.Background(), f))
	require.Zero(t, tbl.release(context.Background(), g))
	assert.Empty(t, tbl.perFile)
	assert.Zero(t, tbl.files.total)
}

// An exclusive flock through a read-only descriptor is a shared lock on the store's file, and exclusive only
// among the read-only descriptors' flocks of the mount.
func TestReadOnlyExclusiveFlockIsShared(t *testing.T) {
	tbl := &lockTable{}
	path := filepath.Join(t.TempDir(), "f")
	ro1, ro2 := request(t, tbl, path, syscall.O_RDONLY), request(t, tbl, path, syscall.O_RDONLY)
	rw := request(t, tbl, path, syscall.O_RDWR)
	elsewhere, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer syscall.Close(elsewhere)
	ex, sh, un := posixLock(syscall.F_WRLCK, 0, 0), posixLock(syscall.F_RDLCK, 0, 0), posixLock(syscall.F_UNLCK, 0, 0)

	require.Zero(t, tbl.flock(ro1, ex, false))
	require.NoError(t, unix.Flock(elsewhere, unix.LOCK_SH|unix.LOCK_NB), "a reader elsewhere is not locked out")
	require.NoError(t, unix.Flock(elsewhere, unix.LOCK_UN))
	assert.Equal(t, unix.EWOULDBLOCK, unix.Flock(elsewhere, unix.LOCK_EX|unix.LOCK_NB),
		"a writer elsewhere waits, as for any reader")
	assert.Equal(t, syscall.EWOULDBLOCK, tbl.flock(ro2, sh, false), "read-only descriptors of the mount are kept apart")
	assert.Equal(t, syscall.EWOULDBLOCK, tbl.flock(ro2, ex, false))
	require.Zero(t, tbl.flock(rw, sh, false), "a writable descriptor's shared lock is not held back by a reader")
	require.Zero(t, tbl.flock(rw, un, false))
	assert.Equal(t, syscall.EWOULDBLOCK, tbl.flock(rw, ex, false))

	require.Zero(t, tbl.flock(ro1, un, false))
	require.Zero(t, tbl.flock(ro2, ex, false))
	require.Zero(t, tbl.release(context.Background(), ro2))
	assert.Empty(t, tbl.readers)
	assert.Empty(t, tbl.flocked)
	require.NoError(t, unix.Flock(elsewhere, unix.LOCK_EX|unix.LOCK_NB), "a release drops the flock")
	require.NoError(t, unix.Flock(elsewhere, unix.LOCK_UN))

	require.Zero(t, tbl.flock(rw, ex, false))
	assert.Equal(t, unix.EWOULDBLOCK, unix.Flock(elsewhere, unix.LOCK_SH|unix.LOCK_NB), "a writer's exclusive lock is one")
	require.Zero(t, tbl.flock(rw, sh, false))
	require.NoError(t, unix.Flock(elsewhere, unix.LOCK_SH|unix.LOCK_NB))
	assert.Equal(t, syscall.EWOULDBLOCK, tbl.flock(rw, ex, false))
	assert.Empty(t, tbl.flocked, "a conversion refused drops the lock held, as flock(2) does")
	require.NoError(t, unix.Flock(elsewhere, unix.LOCK_UN))
	require.Zero(t, tbl.flock(rw, ex, true))
	require.NoError(t, unix.Flock(elsewhere, unix.LOCK_SH|unix.LOCK_NB), "through a read-only mount, every flock is shared")
}

// A uid has only so many requests waiting in a session, and a session over all uids; the others are refused at
// once, while another uid on the same session's files and the same uid in another session still wait; the waiters end when the lock comes
// free or their caller is interrupted.
func TestWaitersShared(t *testing.T) {
	tbl := &lockTable{waiters: shares{limits: shareLimits{sessionUID: 2, session: 3, uid: 3, total: 10}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := payer{"a", 1}
	tried := make(chan struct{}, 2)
	held := func() syscall.Errno {
		select {
		case tried <- struct{}{}:
		default:
		}
		return syscall.EAGAIN
	}
	ended := make(chan syscall.Errno, 3)
	for range 2 {
		go func() { ended <- tbl.wait(ctx, a, held) }()
	}
	<-tried
	<-tried // both admitted: they try only once admitted
	assert.Equal(t, syscall.ENOLCK, tbl.wait(ctx, a, held), "uid 1's waiters in session a are all in use")
	for _, p := range []payer{{"a", 2}, {"b", 1}} {
		tries := 0
		freeSoon := func() syscall.Errno {
			if tries++; tries < 3 {
				return syscall.EAGAIN
			}
			return 0
		}
		assert.Zero(t, tbl.wait(ctx, p, freeSoon), "%v waits, and gets the lock", p)
		assert.Equal(t, 3, tries)
	}
	third := make(chan struct{})
	go func() {
		ended <- tbl.wait(ctx, payer{"a", 5}, func() syscall.Errno {
			select {
			case <-third:
			default:
				close(third)
			}
			return syscall.EAGAIN
		})
	}()
	<-third
	assert.Equal(t, syscall.ENOLCK, tbl.wait(ctx, payer{"a", 6}, held), "session a's waiters are all in use, whatever uid asks")
	cancel()
	for range 3 {
		assert.Equal(t, syscall.EINTR, <-ended)
	}
	tbl.mu.Lock()
	defer tbl.mu.Unlock()
	assert.Zero(t, tbl.waiters.total)
}
