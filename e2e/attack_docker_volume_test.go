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

// TestAttackDockerVolumeNameTakenOver: a second mount (another store) started with the plugin name a running mount
// serves would take its socket over (the engine then resolving volume names to the other store's sessions) and
// sweep its stages in use. It is refused before it mounts, and the first plugin answers on, its stage in place.
func TestAttackDockerVolumeNameTakenOver(t *testing.T) {
	needRootMount(t)
	store := t.TempDir()
	ok(t, store, "new", "mine")
	m := mountVolumes(t, store)
	plugin := pluginClient(t, volumeDriver)
	code, out := plugin("/VolumeDriver.Mount", `{"Name":"mine","ID":"c1"}`)
	require.Equal(t, 200, code, out)
	laid := filepath.Join("/run/sessionfs/volumes", volumeDriver, "mine")
	require.DirExists(t, filepath.Join(laid, "workspace"))

	other := t.TempDir()
	ok(t, other, "new", "mine")
	mnt := filepath.Join(t.TempDir(), "mnt")
	r := cli(t, other, "mount", mnt, "--docker-volumes="+volumeDriver)
	assert.Equal(t, 125, r.code, "a second mount of the name is refused: %s", r.stderr)
	assert.Contains(t, r.stderr, "another sessionfs mount serves the Docker volume plugin of this name")
	assert.False(t, isFUSEMount(mnt), "nothing mounted")
	code, out = plugin("/VolumeDriver.Get", `{"Name":"mine"}`)
	require.Equal(t, 200, code, out)
	assert.Contains(t, out, m.session("mine"), "the first mount's plugin answers")
	assert.DirExists(t, filepath.Join(laid, "workspace"), "its stage in place")
	code, out = plugin("/VolumeDriver.Unmount", `{"Name":"mine","ID":"c1"}`)
	require.Equal(t, 200, code, out)
}
