package e2e

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAttackDockerVolumeTurncoatDaemon: the engine binds a volume's mountpoint by path, as root. A daemon that
// answers a session's folder truly to the plugin's check and as a link to a host folder afterwards (the
// fault-injection build's op turncoat, as a compromised daemon would) must not get that host folder into a
// volume's container. Before the plugin laid the session by descriptor, it checked the path and handed it on, and
// the container read the host's file.
func TestAttackDockerVolumeTurncoatDaemon(t *testing.T) {
	needRootMount(t)
	engine := needDocker(t)
	images(t, engine, "")
	exe := faultBuild(t)
	host := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(host, "host-secret"), []byte("host's\n"), 0o644))
	store := t.TempDir()
	ok(t, store, "new", "turned")
	m := mountVolumesWith(t, exe, store)
	t.Cleanup(func() { _, _ = dockerCLI(t, "volume", "rm", "-f", "turned") })

	_, err := os.Lstat(filepath.Join(m.mnt, "sessions", faultPrefix+"turncoat-turned="+url.PathEscape(host)))
	require.ErrorIs(t, err, syscall.EEXIST, "the daemon turns on its next answer for session turned")
	out, err := dockerCLI(t, "run", "--rm", "--mount", "type=volume,volume-driver="+volumeDriver+",src=turned,dst=/session",
		busyboxImage, "ls", "/session")
	t.Logf("the container of a volume the daemon lies about: %v: %s", err, out)
	assert.NotContains(t, out, "host-secret", "the host's folder in the volume's container")
	if err == nil {
		assert.Contains(t, strings.Fields(out), "workspace", "a container that started has the session")
	}
	st, err := os.Lstat(m.session("turned"))
	require.NoError(t, err)
	assert.NotZero(t, st.Mode()&os.ModeSymlink, "the daemon did lie: sessions/turned is a link now")
}

// TestAttackDockerVolumeSessionLinks: a session's processes swap its workspace in the store for a link to a host
// folder; the next container of its volume is refused with a clear error, and sees nothing of the host.
func TestAttackDockerVolumeSessionLinks(t *testing.T) {
	needRootMount(t)
	engine := needDocker(t)
	images(t, engine, "")
	host := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(host, "host-secret"), []byte("host's\n"), 0o644))
	store := t.TempDir()
	ok(t, store, "new", "linked")
	mountVolumes(t, store)
	t.Cleanup(func() { _, _ = dockerCLI(t, "volume", "rm", "-f", "linked") })

	ws := filepath.Join(store, "sessions", "linked", "workspace")
	require.NoError(t, os.RemoveAll(ws))
	require.NoError(t, os.Symlink(host, ws))
	out, err := dockerCLI(t, "run", "--rm", "--mount", "type=volume,volume-driver="+volumeDriver+",src=linked,dst=/session",
		busyboxImage, "ls", "/session/workspace/")
	assert.Error(t, err, "a session whose workspace is a link is not laid: %s", out)
	assert.Contains(t, out, "not a folder of the session")
	assert.NotContains(t, out, "host-secret")
}
