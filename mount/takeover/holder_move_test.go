package takeover

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// movePair is a connected pair of stream sockets, as the control socket's two ends.
func movePair(t *testing.T) (holder, asker *net.UnixConn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "move")
		defer f.Close()
		c, err := net.FileConn(f)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c.(*net.UnixConn)
	}
	return conn(fds[0]), conn(fds[1])
}

// inode is the inode number of the file open at fd.
func inode(t *testing.T, fd int) uint64 {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(fd, &st))
	return st.Ino
}

// TestMoveCarriesEveryDescriptor: what a holder moving sends (sendMoved) is read whole by the asker (receiveHeld):
// the state, the connection and the node log, and each lock owner's descriptor in the order of the state's owners,
// past the kernel's most descriptors in one message (253) and a state the stream cuts.
func TestMoveCarriesEveryDescriptor(t *testing.T) {
	holder, asker := movePair(t)
	memfd := func() int {
		fd, err := unix.MemfdCreate("sessionfs-move-test", unix.MFD_CLOEXEC)
		require.NoError(t, err)
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	dev, nodes := memfd(), memfd()
	locks := keptOwners(2*lockChunk + 50)
	for i := range locks {
		locks[i].FD = memfd()
	}
	state, err := json.Marshal(movedState{Version: "test", Config: Config{Store: "/store", Mountpoint: "/mnt"}, Locks: locks})
	require.NoError(t, err)
	sent := make(chan error, 1)
	go func() { sent <- sendMoved(holder, state, dev, nodes, locks) }()
	moved, fds, err := receiveHeld(asker)
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	require.NoError(t, err)
	require.NoError(t, <-sent)
	require.Len(t, fds, 2+len(locks))
	assert.Equal(t, "test", moved.Version)
	assert.Equal(t, len(locks), len(moved.Locks))
	assert.Equal(t, inode(t, dev), inode(t, fds[0]), "the connection first")
	assert.Equal(t, inode(t, nodes), inode(t, fds[1]), "the node log second")
	for i, o := range moved.Locks {
		require.Equal(t, locks[i].Owner, o.Owner)
		require.Equal(t, inode(t, locks[i].FD), inode(t, fds[2+i]), "lock owner %d's descriptor", i)
	}
}

// TestMoveRefusedIsAnError: a holder that does not move answers in words (an upgradeReply), which the asker
// reports, holding nothing.
func TestMoveRefusedIsAnError(t *testing.T) {
	holder, asker := movePair(t)
	require.NoError(t, json.NewEncoder(holder).Encode(upgradeReply{Error: "this holder's state is not the asker's: it serves on"}))
	_, fds, err := receiveHeld(asker)
	assert.ErrorContains(t, err, "it serves on")
	assert.Empty(t, fds)
}

// TestMoveGoneOrStays: after "taken", the asker reads "gone", or a holder that serves on saying so (not io.EOF:
// the asker must not take the mount), or nothing at all from a holder that ended (io.EOF: it takes the mount).
func TestMoveGoneOrStays(t *testing.T) {
	holder, asker := movePair(t)
	_, err := holder.Write([]byte(moveGone))
	require.NoError(t, err)
	assert.NoError(t, expectWord(asker, moveGone))

	holder, asker = movePair(t)
	require.NoError(t, json.NewEncoder(holder).Encode(upgradeReply{Error: "the asker did not say it took the mount"}))
	err = expectWord(asker, moveGone)
	assert.Error(t, err)
	assert.False(t, errors.Is(err, io.EOF), "a holder serving on is told from one that ended: %v", err)

	holder, asker = movePair(t)
	holder.Close()
	assert.ErrorIs(t, expectWord(asker, moveGone), io.EOF)
}
