package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/backends/modal"
	"github.com/sessionfs/sessionfs/backends/modal/modaltest"
)

// modalSetup starts the fake control plane and a mounted store holding session s1, and returns the environment
// that points the CLI at the fake.
func modalSetup(t *testing.T) (*modaltest.Server, string, *mounted, []string) {
	t.Helper()
	fake, err := modaltest.Start()
	require.NoError(t, err)
	t.Cleanup(fake.Close)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	env := []string{"MODAL_SERVER_URL=" + fake.URL, "MODAL_TOKEN_ID=" + modaltest.TokenID,
		"MODAL_TOKEN_SECRET=" + modaltest.TokenSecret, "MODAL_CONFIG_PATH=" + filepath.Join(t.TempDir(), "none.toml")}
	return fake, store, mount(t, store), env
}

// TestModalSyncThroughMount: push a session to its Volume through the real SDK and the fake control plane, let
// "the run" change the Volume, pull: the store and the mount show the run's changes at once.
func TestModalSyncThroughMount(t *testing.T) {
	fake, store, m, env := modalSetup(t)
	const rel = ".claude/projects/-session-workspace/u1.jsonl"
	viaMount := filepath.Join(m.session("s1"), ".claude", "projects", "-some-cwd", "u1.jsonl")
	require.NoError(t, os.WriteFile(viaMount, []byte("{\"n\":1}\n"), 0o600))

	r := cliIn(t, store, "", env, "sync", "push", "s1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "to Volume "+modal.VolumeName("s1"))
	assert.Contains(t, fake.Files(modal.VolumeName("s1")), rel)

	fake.Write(modal.VolumeName("s1"), rel, []byte("{\"n\":1}\n{\"n\":2}\n"))
	fake.Write(modal.VolumeName("s1"), "workspace/out.txt", []byte("made in the sandbox"))
	r = cliIn(t, store, "", env, "sync", "pull", "s1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "pulled 2 files")
	within100ms(t, "a pulled transcript through an alias", func() bool {
		b, err := os.ReadFile(viaMount)
		return err == nil && strings.Count(string(b), "\n") == 2
	})
	b, err := os.ReadFile(filepath.Join(m.session("s1"), "workspace", "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "made in the sandbox", string(b))

	bad := append(env, "MODAL_TOKEN_SECRET=wrong")
	r = cliIn(t, store, "", bad, "sync", "push", "s1")
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "Modal refused the credentials")
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1)
	r = cliIn(t, store, "", []string{"MODAL_CONFIG_PATH=/nonexistent", "MODAL_TOKEN_ID=", "MODAL_TOKEN_SECRET="}, "sync", "push", "s1")
	assert.Contains(t, r.stderr, "no Modal credentials")
}

// TestModalRunThroughMount: run --backend modal pushes the session, runs the command in a sandbox (the fake's,
// with the Volume at /session), returns its exit code and pulls its changes: the mount shows them.
func TestModalRunThroughMount(t *testing.T) {
	_, store, m, env := modalSetup(t)
	require.NoError(t, os.WriteFile(filepath.Join(m.session("s1"), ".claude", "projects", "-host-cwd", "t.jsonl"), []byte("{\"n\":1}\n"), 0o600))

	r := cliIn(t, store, "", env, "run", "--backend", "modal", "--image", "debian:bookworm-slim", "s1", "--", "sh", "-c",
		`echo '{"n":2}' >> "$CLAUDE_CONFIG_DIR/projects/-session-workspace/t.jsonl"; echo from-modal > out.txt; pwd; exit 4`)
	assert.Equal(t, 4, r.code, r.stderr)
	// The fake runs the command on this host with /session mapped to a folder it materialised from the Volume.
	assert.True(t, strings.HasSuffix(r.stdout, "/workspace\n"), "it ran in the workspace: %q", r.stdout)
	b, err := os.ReadFile(filepath.Join(m.session("s1"), ".claude", "projects", "-host-cwd", "t.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, "{\"n\":1}\n{\"n\":2}\n", string(b), "the sandbox's append, through an alias of the mount")
	b, err = os.ReadFile(filepath.Join(m.session("s1"), "workspace", "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "from-modal\n", string(b))
	meta, err := os.ReadFile(filepath.Join(store, "sessions", "s1", "session.json"))
	require.NoError(t, err)
	assert.Contains(t, string(meta), `"backend": "modal"`)
	assert.Contains(t, string(meta), `"exit_code": 4`)
}

// TestModalRunFlagsAndDoctor: run --help shows the sandbox's default lifetime; -i/-t are refused for Modal runs,
// not ignored; doctor asks the server, which accepts the credentials or refuses them.
func TestModalRunFlagsAndDoctor(t *testing.T) {
	_, store, _, env := modalSetup(t)
	r := cliIn(t, store, "", env, "run", "--help")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `--timeout duration\s+the sandbox's lifetime.*\(default 24h0m0s\)`, r.stdout)
	for _, flag := range []string{"-i", "-t"} {
		r = cliIn(t, store, "", env, "run", "--backend", "modal", "--image", "debian:bookworm-slim", flag, "s1", "--", "true")
		assert.Equal(t, 125, r.code, flag)
		assert.Contains(t, r.stderr, "applies to --backend local or docker, not modal", flag)
	}
	r = cliIn(t, store, "", env, "doctor")
	assert.Regexp(t, `(?m)^OK\s+modal\s+Modal at http://127\.0\.0\.1:\d+ accepts the credentials`, r.stdout)
	r = cliIn(t, store, "", append(env, "MODAL_TOKEN_SECRET=wrong"), "doctor")
	assert.Regexp(t, `(?m)^WARN\s+modal\s+Modal refused the credentials`, r.stdout)
}
