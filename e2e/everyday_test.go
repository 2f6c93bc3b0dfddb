package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSystemdReady: under systemd (NOTIFY_SOCKET) the mount says READY=1 once it serves.
func TestSystemdReady(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	require.NoError(t, err)
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	m := mount(t, t.TempDir())
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	buf := make([]byte, 256)
	n, err := conn.Read(buf)
	require.NoError(t, err)
	assert.Contains(t, string(buf[:n]), "READY=1")
	assert.True(t, isFUSEMount(m.mnt))
	unit, err := os.ReadFile("../contrib/systemd/sessionfs.service")
	require.NoError(t, err)
	assert.Contains(t, string(unit), "Type=notify")
}

// mount --daemon returns once the mount serves and prints the daemon's pid; the daemon logs to --log and ends
// with sessionfs unmount. A mount that cannot come up returns its error, not a pid.
func TestMountDaemon(t *testing.T) {
	needFUSE(t)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	mnt := filepath.Join(t.TempDir(), "mnt")
	logPath := filepath.Join(t.TempDir(), "state", "mount.log")
	r := cli(t, store, "mount", "--daemon", "--log", logPath, mnt)
	pid := 0
	_, _ = fmt.Sscan(r.stdout, &pid)
	t.Cleanup(func() {
		if isFUSEMount(mnt) || staleMount(mnt) {
			_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
		if pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	require.Equal(t, 0, r.code, r.stderr)
	require.Greater(t, pid, 0, "stdout is the pid: %q", r.stdout)
	assert.Contains(t, r.stderr, logPath)
	assert.True(t, isFUSEMount(mnt), "the mount serves when mount --daemon returns")
	assert.DirExists(t, filepath.Join(mnt, "sessions", "s1", "workspace"))
	assert.NoError(t, syscall.Kill(pid, 0), "the daemon runs")
	b, err := os.ReadFile(logPath)
	require.NoError(t, err)
	assert.Contains(t, string(b), "serving "+store)
	if os.Geteuid() == 0 {
		// Started with its bounding set shrunk already (confine.StartDaemon), the daemon is as confined as a
		// mount in the foreground: every thread holds the listed capabilities, and its helper its own.
		keep := uint64(1<<0 | 1<<1 | 1<<3 | 1<<4 | 1<<6 | 1<<7 | 1<<21)
		for _, st := range threadStatus(t, pid) {
			assert.Equal(t, "2", st["Seccomp"])
			for _, set := range []string{"CapEff", "CapPrm", "CapBnd"} {
				got, err := strconv.ParseUint(st[set], 16, 64)
				require.NoError(t, err)
				assert.Equal(t, keep, got, "%s = %s", set, st[set])
			}
		}
		helper := procStatus(t, helperPID(t, pid))
		got, err := strconv.ParseUint(helper["CapBnd"], 16, 64)
		require.NoError(t, err)
		assert.Equal(t, keep|1<<19|1<<23, got, "the helper's bounding set")
	}

	r = cli(t, store, "mount", "--daemon", "--log", logPath, filepath.Join(t.TempDir(), "again"))
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "already mounted at "+mnt)
	assert.Empty(t, r.stdout)

	ok(t, store, "unmount", mnt)
	eventually(t, 10*time.Second, func() bool { return syscall.Kill(pid, 0) != nil }, "the daemon outlived its mount")
	assert.False(t, isFUSEMount(mnt))
}
