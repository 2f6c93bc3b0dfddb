package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Flags a backend does not take are refused, not ignored; a local run on an unmounted store says so, as exec
// does; a profile's conversations and credentials are not copied into new sessions.
func TestRunFlagsAndProfile(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	for _, args := range [][]string{
		{"run", "--timeout", "1m", "s1", "--", "true"},
		{"run", "--backend", "local", "--image", "x", "s1", "--", "true"},
		{"run", "--backend", "docker", "--timeout", "1m", "--image", "x", "s1", "--", "true"},
		{"run", "--backend", "modal", "--strict", "--image", "x", "s1", "--", "true"},
	} {
		r := cli(t, store, args...)
		assert.Equal(t, 125, r.code, "%v", args)
		assert.Contains(t, r.stderr, "applies to --backend", "%v", args)
	}
	r := cli(t, store, "run", "s1", "--", "true")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stderr, "not mounted")

	prof := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(prof, "CLAUDE.md"), []byte("be nice"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(prof, "projects", "-home-me"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(prof, "projects", "-home-me", "a.jsonl"), []byte("{}\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(prof, ".credentials.json"), []byte("{}"), 0o600))
	ok(t, store, "new", "p1", "--profile", prof)
	claudeDir := filepath.Join(store, "sessions", "p1", ".claude")
	assert.FileExists(t, filepath.Join(claudeDir, "CLAUDE.md"))
	assert.NoFileExists(t, filepath.Join(claudeDir, ".credentials.json"))
	assert.NoDirExists(t, filepath.Join(claudeDir, "projects", "-home-me"))
	r = cli(t, store, "new", "p2", "--profile", filepath.Join(prof, "missing"))
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, filepath.Join(prof, "missing"))
}

// A mistyped backend is named as unknown, whatever flag comes with it (it was "--image applies to --backend docker
// or modal, not dockr").
func TestRunUnknownBackend(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	for _, args := range [][]string{
		{"run", "--backend", "dockr", "--image", "x", "s1", "--", "true"},
		{"run", "--backend", "dockr", "s1", "--", "true"},
		{"resume", "s1", "--backend", "dockr"},
	} {
		r := cli(t, store, args...)
		assert.Equal(t, 125, r.code, "%v", args)
		assert.Contains(t, r.stderr, `unknown backend "dockr" (want local, docker or modal)`, "%v", args)
		assert.NotContains(t, r.stderr, "applies to", "%v", args)
	}
}

// Docker's habits: --image alone means --backend docker; without --image the image is config.toml's (the
// store's over the user's); --env-file; no "--" needed; -w is relative to the workspace and made when missing,
// in a container as on the host.
func TestRunDockerHabits(t *testing.T) {
	dockerContainment(t)
	store, home := t.TempDir(), t.TempDir()
	ok(t, store, "new", "s1")
	env := []string{"XDG_CONFIG_HOME=" + home}
	r := cliIn(t, store, "", env, "run", "--image", busyboxImage, "s1", "sh", "-c", `echo "in $PWD"`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "in /session/workspace\n", r.stdout, "--image alone runs in a container")

	r = cliIn(t, store, "", env, "run", "--backend", "docker", "s1", "--", "true")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "--backend docker needs an image")
	assert.Contains(t, r.stderr, filepath.Join(home, "sessionfs", "config.toml"))

	require.NoError(t, os.MkdirAll(filepath.Join(home, "sessionfs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, "sessionfs", "config.toml"), []byte("[docker]\nimage = \"no-such-image-here\"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(store, "config.toml"), []byte("[docker]\nimage = \""+busyboxImage+"\"\n"), 0o644))
	f := filepath.Join(t.TempDir(), "env")
	require.NoError(t, os.WriteFile(f, []byte("# for the run\nA=from the file\nB=1\n"), 0o600))
	r = cliIn(t, store, "", env, "run", "--backend", "docker", "--env-file", f, "-e", "B=2", "-w", "api/deep", "s1",
		"sh", "-c", `echo "$A $B in $PWD"`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "from the file 2 in /session/workspace/api/deep\n", r.stdout, "the store's image, the env file, -w under the workspace")
	assert.DirExists(t, filepath.Join(store, "sessions", "s1", "workspace", "api", "deep"))

	require.NoError(t, os.WriteFile(filepath.Join(store, "config.toml"), []byte("[docker]\nimgae = \"x\"\n"), 0o644))
	r = cliIn(t, store, "", env, "run", "--backend", "docker", "s1", "true")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "unknown setting")
}
