package nodes

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestBoundOverFollowsNoSessionLink: boundOver walks names of a session's (its .claude, its projects folder) to
// see whether a bind sits on a view. A session that made its .claude a link elsewhere on the host (here to a
// folder of another filesystem, /dev/shm) must not have the daemon look there by path (a mount hung or slow
// there would stop the watcher for every session; and a device not the mount's passed for a bind); a real
// mount on the folder still counts.
func TestBoundOverFollowsNoSessionLink(t *testing.T) {
	m := t.TempDir()
	elsewhere, err := os.MkdirTemp("/dev/shm", "sessionfs-boundover-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(elsewhere) })
	var a, b unix.Stat_t
	require.NoError(t, unix.Stat(m, &a))
	require.NoError(t, unix.Stat(elsewhere, &b))
	require.NotEqual(t, a.Dev, b.Dev, "control: /dev/shm is another filesystem than %s", m)
	require.NoError(t, os.MkdirAll(filepath.Join(elsewhere, "projects", "-w"), 0o755))
	s1 := filepath.Join(m, "sessions", "s1")
	require.NoError(t, os.MkdirAll(s1, 0o755))
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(s1, ".claude")))
	tr := &Tree{Mountpoint: m}
	assert.False(t, tr.boundOver("s1/.claude/projects/-w"), "the session's link was followed to another filesystem")

	if os.Geteuid() != 0 {
		return // the control below mounts
	}
	view := filepath.Join(m, "sessions", "s2", ".claude", "projects", "-w")
	require.NoError(t, os.MkdirAll(view, 0o755))
	require.NoError(t, unix.Mount("tmpfs", view, "tmpfs", 0, "size=1m"))
	t.Cleanup(func() { _ = unix.Unmount(view, unix.MNT_DETACH) })
	assert.True(t, tr.boundOver("s2/.claude/projects/-w"), "control: a mount on the view is seen")
}
