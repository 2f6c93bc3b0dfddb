package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAttackRequestKillsEveryDaemon (issue 49, "What to build" 5): a request that kills the daemon serving it (in
// the test build, a lookup of sessions/.sessionfs-fault-die: SIGKILL, as the OOM killer of the daemon's cgroup
// sends) is resent by the kernel to the daemon that takes over. That one dies of it too; the next answers it EIO,
// and the mount serves on: the caller gets an error, the other sessions their files. Before, each daemon taking
// over died of the request in turn: the mount's users waited for good, or, once three daemons died before they said
// they served, the connection was ended and every session's mount with it.
func TestAttackRequestKillsEveryDaemon(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a confined mount and its holder")
	exe := faultBuild(t)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "s1", "workspace", "notes.txt"), []byte("kept\n"), 0o644))
	m := mountWith(t, exe, store)
	helper := helperPID(t, m.cmd.Process.Pid)
	t.Cleanup(func() { endTakeoverMount(t, m, helper) })

	done := make(chan error, 1)
	go func() {
		_, err := os.Lstat(filepath.Join(m.mnt, "sessions", ".sessionfs-fault-die"))
		done <- err
	}()
	select {
	case err := <-done:
		var errno syscall.Errno
		require.True(t, errors.As(err, &errno), "the fatal lookup: %v (mount: %s)", err, m.log)
		assert.Equal(t, syscall.EIO, errno, "the fatal lookup's answer (mount: %s)", m.log)
	case <-time.After(30 * time.Second):
		t.Fatalf("the fatal lookup had no answer in 30 s: its daemons die in turn (mount: %s)", m.log)
	}
	// The daemon says it answered EIO just before it does, on a stderr the test reads through a pipe: the caller can
	// have its answer before the line reaches m.log (CI once read the log in between).
	eventually(t, 10*time.Second, func() bool {
		return strings.Contains(m.log.String(), "killed the daemons it was sent to: answered EIO")
	}, "the daemon after them says it answered the request EIO: %s", m.log)
	log := m.log.String()
	t.Logf("daemons that died of the request: %d (the first, and the one it was resent to)", 1+strings.Count(log, "died serving request"))
	assert.Equal(t, 1, strings.Count(log, "died serving request"), "the daemon the request was resent to died of it, and only that one: %s", log)

	// The mount serves on, every session's files there.
	b, err := os.ReadFile(filepath.Join(m.session("s1"), "workspace", "notes.txt"))
	require.NoError(t, err, "the mount serves after the fatal request: %s", log)
	assert.Equal(t, "kept\n", string(b))
	ok(t, store, "new", "s2")
	eventually(t, 10*time.Second, func() bool {
		_, err := os.Stat(m.session("s2"))
		return err == nil
	}, "a session made after it shows in the mount: %s", m.log)
	assert.False(t, procGone(helper), "the holder keeps the mount")
}
