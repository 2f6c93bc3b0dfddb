package opencode

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents/agentstest"
	"github.com/sessionfs/sessionfs/confine"
	"github.com/sessionfs/sessionfs/layout"
)

// TestFIFOJournal: a session's process puts a FIFO in place of the database's journal after the launch checked
// the files. SQLite opens the journal by name and waits for a writer that never comes; the launch gives up on the
// update at once, says why, and goes on (it used to wait for good).
func TestFIFOJournal(t *testing.T) {
	if confine.ABI() < 1 {
		t.Skip("the update needs Landlock, which this kernel lacks")
	}
	sess, root := agentstest.OpenSession(t)
	p := seed(t, root)
	fifo := p + "-journal"
	checked = func(*layout.Dir) { require.NoError(t, unix.Mkfifo(fifo, 0o644)) }
	t.Cleanup(func() {
		checked = nil
		// Lets the update that was given up on go: its open of the FIFO returns, and it ends.
		if fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
			unix.Close(fd)
		}
	})
	start := time.Now()
	err := Follow(sess, filepath.Join(root, "workspace"))
	require.ErrorIs(t, err, errStuck)
	assert.Contains(t, err.Error(), "not a regular file")
	assert.Less(t, time.Since(start), 5*time.Second)
	st, err := os.Lstat(fifo)
	require.NoError(t, err)
	assert.Equal(t, os.ModeNamedPipe, st.Mode().Type(), "nothing of the session's was changed")
}
