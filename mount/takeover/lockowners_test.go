package takeover

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/mount/nodes"
)

// openFiles counts this process's open descriptors.
func openFiles(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

// keptFile opens a file for an owner's descriptor.
func keptFile(t *testing.T) int {
	t.Helper()
	fd, err := unix.Open(filepath.Join(t.TempDir(), "f"), unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	require.NoError(t, err)
	return fd
}

// The holder keeps what the daemon sends it, at most its limit: past it, what it is sent is closed at once and the
// daemon is not held up (a session could make a daemon's every lock owner; the holder's limit is the daemon's own).
// A daemon killed with messages unread: the holder reads them all before the next daemon is given the table.
func TestHeldLocksBoundedAndDrained(t *testing.T) {
	h := newHeldLocks()
	h.limit = 4
	daemon, theirs, err := NewLockSocket()
	require.NoError(t, err)
	fd := keptFile(t)
	defer unix.Close(fd)
	baseline := openFiles(t)
	h.attach(theirs)
	for id := uint64(1); id <= 1000; id++ {
		require.NoError(t, daemon.Keep(nodes.KeptOwner{ID: id, Owner: id}, fd), "owner %d", id)
	}
	daemon.Drop(1)
	daemon.Drop(2)
	for id := uint64(3); id <= dropBatch; id++ { // a batch of drops is said once full
		daemon.Drop(id + 1000)
	}
	daemon.Drop(3)
	unix.Close(daemon.fd) // the daemon is killed, one drop not said: the next daemon drops what holds nothing
	h.detach()
	h.mu.Lock()
	kept := len(h.owners)
	h.mu.Unlock()
	assert.Equal(t, 2, kept, "4 kept, 2 dropped")
	assert.Equal(t, 1000-4, h.refused)
	// The daemon's end closed, the holder's 2 copies open, its end closed or about to be (its reader closes it).
	assert.LessOrEqual(t, openFiles(t), baseline-1+2, "what the holder refused or was told of is closed")
	for _, o := range h.held() {
		unix.Close(o.FD)
	}
}

// Each daemon taking over is given every descriptor kept, then "end"; what it drops, the holder closes.
func TestHeldLocksHandedOver(t *testing.T) {
	h := newHeldLocks()
	daemon, theirs, err := NewLockSocket()
	require.NoError(t, err)
	h.attach(theirs)
	fd := keptFile(t)
	defer unix.Close(fd)
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(fd, &st))
	for id := uint64(1); id <= 3; id++ {
		require.NoError(t, daemon.Keep(nodes.KeptOwner{ID: id, Owner: 10 * id, Fh: 100 * id, Session: "s", UID: 7}, fd))
	}
	unix.Close(daemon.fd)
	h.detach()

	next, theirs, err := NewLockSocket()
	require.NoError(t, err)
	h.handTo(theirs)
	owners, fds, err := next.Received()
	require.NoError(t, err)
	require.Len(t, owners, 3)
	require.Len(t, fds, 3)
	for i, o := range owners {
		assert.Equal(t, nodes.KeptOwner{ID: o.ID, Owner: 10 * o.ID, Fh: 100 * o.ID, Session: "s", UID: 7}, o)
		var got unix.Stat_t
		require.NoError(t, unix.Fstat(fds[i], &got))
		assert.Equal(t, st.Ino, got.Ino, "the same file")
		unix.Close(fds[i])
	}
	next.Drop(owners[0].ID)
	require.NoError(t, next.Keep(nodes.KeptOwner{ID: 4}, fd))
	unix.Close(next.fd)
	h.detach()
	h.mu.Lock()
	defer h.mu.Unlock()
	assert.Len(t, h.owners, 3)
	assert.NotContains(t, h.owners, owners[0].ID)
	assert.Contains(t, h.owners, uint64(4))
}

// A holder that reads nothing (stopped) holds a daemon's lock requests up for at most keepWait: the keep that
// finds no room fails, and the next ones fail at once for keepRest (their locks are taken all the same).
func TestLockSocketHolderStopped(t *testing.T) {
	daemon, theirs, err := NewLockSocket()
	require.NoError(t, err)
	defer unix.Close(theirs) // open, never read: a holder stopped
	defer unix.Close(daemon.fd)
	fd := keptFile(t)
	defer unix.Close(fd)
	sent := 0
	for ; sent < 100000; sent++ {
		if err = daemon.Keep(nodes.KeptOwner{ID: uint64(sent + 1)}, fd); err != nil {
			break
		}
	}
	t.Logf("%d keeps queued before the socket was full", sent)
	require.ErrorIs(t, err, errHolderSlow)
	require.ErrorIs(t, daemon.Keep(nodes.KeptOwner{ID: 1 << 40}, fd), errHolderSlow, "not waited for again")
	for id := range uint64(10 * maxPendingDrops) {
		daemon.Drop(id)
	}
	daemon.mu.Lock()
	defer daemon.mu.Unlock()
	assert.LessOrEqual(t, len(daemon.dropped), maxPendingDrops)
	assert.False(t, daemon.broken, "the holder is slow, not gone")
}
