package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/internal/testimage"
)

// TestDockerVolumeInPodman: Podman's volume plugins speak the same protocol; one configured in containers.conf
// ([engine.volume_plugins], the mount's plugin socket) makes sessions Podman volumes: podman volume create, the
// real claude CLI in a container of the volume against the API stub, a second container carrying the
// conversation on from another cwd, podman volume rm to the trash.
func TestDockerVolumeInPodman(t *testing.T) {
	needPodman(t)
	needRootMount(t)
	claude := claudeBin(t)
	real, err := filepath.EvalSymlinks(claude)
	require.NoError(t, err)
	p := startPodman(t, nil)
	libs, err := testimage.SharedLibs(real)
	require.NoError(t, err)
	require.NoError(t, testimage.Import(p.cli, claudeImage, libs), "the claude test image in Podman")
	t.Cleanup(func() { _ = exec.Command("podman", "--url", "unix://"+p.sock, "rmi", "-f", claudeImage).Run() }) // while the service runs
	store := t.TempDir()
	mountVolumes(t, store)
	api := stub(t, "127.0.0.1:0")

	base, err := os.ReadFile(p.conf)
	require.NoError(t, err)
	conf := filepath.Join(t.TempDir(), "containers.conf")
	require.NoError(t, os.WriteFile(conf, append(base, []byte("\n[engine.volume_plugins]\n"+volumeDriver+" = \"/run/docker/plugins/"+volumeDriver+".sock\"\n")...), 0o644))
	podman := func(args ...string) (string, error) {
		start := time.Now()
		cmd := exec.Command("podman", args...)
		cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
		out, err := cmd.CombinedOutput()
		if took := time.Since(start); took > 10*time.Second {
			t.Logf("podman %s took %s", strings.Join(args, " "), took.Round(time.Millisecond))
		}
		return strings.TrimSpace(string(out)), err
	}
	vol := "podman-" + runTag
	t.Cleanup(func() { _, _ = podman("volume", "rm", "-f", vol) }) // while the plugin serves
	out, err := podman("volume", "create", "--driver", volumeDriver, "-o", "labels=engine=podman", vol)
	require.NoError(t, err, out)
	r := cli(t, store, "show", vol)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "engine=podman")

	claudeIn := func(workdir string, args ...string) string {
		out, err := podman(claudeRunArgs("--volume="+vol+":/session", real, api.URL, workdir, args...)...)
		require.NoError(t, err, out)
		return out
	}
	carriedOn(t, store, vol, func() string { return claudeIn("/session/workspace", "hello from Podman") },
		func() string { return claudeIn("/session/workspace/api", "--continue", "again, from a subfolder") })

	out, err = podman("volume", "rm", vol)
	require.NoError(t, err, out)
	assert.NoDirExists(t, filepath.Join(store, "sessions", vol))
	trashed, err := filepath.Glob(filepath.Join(store, "trash", vol+".*"))
	require.NoError(t, err)
	assert.Len(t, trashed, 1, "podman volume rm moves the session to the trash")
}
