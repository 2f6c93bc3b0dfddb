package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	geminiagent "github.com/sessionfs/sessionfs/agents/gemini"
)

// envVars parses "sessionfs env" output into a map.
func envVars(t *testing.T, out string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, found := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		require.True(t, found, line)
		m[k] = strings.Trim(v, "'")
	}
	return m
}

// TestAgentFlag: env/exec/run --agent set the agent's variable (as the command sees the session) beside Claude's,
// make its folder on demand (Gemini's seeded with trust and the canonical project name), and refuse an unknown
// agent with one line.
func TestAgentFlag(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	sess := filepath.Join(store, "sessions", "s1")

	vars := envVars(t, ok(t, store, "env", "s1", "--agent", "codex"))
	assert.Equal(t, filepath.Join(sess, ".codex"), vars["CODEX_HOME"])
	assert.Equal(t, filepath.Join(sess, ".claude"), vars["CLAUDE_CONFIG_DIR"], "Claude's variables stay")
	assert.DirExists(t, filepath.Join(sess, ".codex"), "made on demand")
	assert.NotContains(t, envVars(t, ok(t, store, "env", "s1")), "CODEX_HOME", "claude is the default")

	vars = envVars(t, ok(t, store, "env", "s1", "--agent", "gemini", "--container"))
	assert.Equal(t, "/session", vars["GEMINI_CLI_HOME"], "the parent of .gemini, as a container sees it")
	b, err := os.ReadFile(filepath.Join(sess, ".gemini", "projects.json"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"projects":{"/session/workspace":"workspace"}}`, string(b))
	b, err = os.ReadFile(filepath.Join(sess, ".gemini", "trustedFolders.json"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"/session/workspace": "TRUST_FOLDER"`)
	b, err = os.ReadFile(filepath.Join(sess, ".gemini", "tmp", "workspace", geminiagent.Owner))
	require.NoError(t, err)
	assert.Equal(t, "/session/workspace", string(b), "the canonical name is claimed as Gemini claims one")

	// A QWEN_RUNTIME_DIR of the caller's would take Qwen's chats out of the session: it is the session's too.
	r := cliWith(t, store, "", append(os.Environ(), "QWEN_RUNTIME_DIR=/tmp/elsewhere"), nil,
		"exec", "s1", "--agent", "qwen", "--", "sh", "-c", `echo "$QWEN_HOME"; echo "$QWEN_RUNTIME_DIR"; pwd`)
	require.Equal(t, 0, r.code, r.stderr)
	qwen := filepath.Join(sess, ".qwen")
	assert.Equal(t, qwen+"\n"+qwen+"\n"+filepath.Join(sess, "workspace")+"\n", r.stdout)

	for _, args := range [][]string{{"env", "s1", "--agent", "aider"}, {"exec", "s1", "--agent=", "--", "true"},
		{"run", "--agent", "CODEX", "s1", "--", "true"}} {
		r := cli(t, store, args...)
		assert.Equal(t, 125, r.code, "%v", args)
		assert.Contains(t, r.stderr, "--agent", "%v", args)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, "one line: %q", r.stderr)
	}
	assert.NoDirExists(t, filepath.Join(sess, ".aider"))
}

// TestAgentFolderHostile: an agent folder the session made a link out of it is refused (the agent would follow
// it); a seed file made a link or a FIFO gets a warning; nothing outside the session is read or written, and
// nothing hangs.
func TestAgentFolderHostile(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	sess := filepath.Join(store, "sessions", "s1")
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.json")
	require.NoError(t, os.WriteFile(secret, []byte(`{"keep":"me"}`), 0o600))

	require.NoError(t, os.Symlink(outside, filepath.Join(sess, ".qwen")))
	require.NoError(t, os.MkdirAll(filepath.Join(sess, ".gemini"), 0o755))
	require.NoError(t, os.Symlink(secret, filepath.Join(sess, ".gemini", "trustedFolders.json")))
	ok(t, store, "new", "s2")
	fifo := filepath.Join(store, "sessions", "s2", ".gemini", "projects.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(fifo), 0o755))
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))

	done := make(chan struct{})
	go func() {
		defer close(done)
		r := cli(t, store, "env", "s1", "--agent", "gemini")
		assert.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stderr, "trustedFolders.json", "the refusal is said")
		for _, args := range [][]string{{"env", "s1", "--agent", "qwen"}, {"exec", "s1", "--agent", "qwen", "--", "touch", "ran"}} {
			r = cli(t, store, args...)
			assert.Equal(t, 125, r.code, "%v: %s", args, r.stderr)
			assert.Contains(t, r.stderr, ".qwen/settings.json: cannot be approved: a folder on its path is a link",
				"a QWEN_HOME that leads out of the session is refused, before the approval check reads through it")
		}
		assert.NoFileExists(t, filepath.Join(sess, "workspace", "ran"))
		r = cli(t, store, "env", "s2", "--agent", "gemini")
		assert.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stderr, "projects.json", "a FIFO is refused, not opened for reading")
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("env --agent hung on a FIFO")
	}
	b, err := os.ReadFile(secret)
	require.NoError(t, err)
	assert.Equal(t, `{"keep":"me"}`, string(b), "the file the link points at is untouched")
	ents, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Len(t, ents, 1, "nothing was made outside the session")
}

// TestAgentFlagDocker: run --backend docker --agent points the agent at its folder as the container sees it.
func TestAgentFlagDocker(t *testing.T) {
	cli := needDocker(t)
	images(t, cli, "")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	mount(t, store)
	r := dockerRun(t, store, "--image", busyboxImage, "--agent", "codex", "s1", "--", "sh", "-c",
		`echo "$CODEX_HOME"; echo "$CLAUDE_CONFIG_DIR"; test -d "$CODEX_HOME" && echo made`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "/session/.codex\n/session/.claude\nmade\n", r.stdout)
	r = dockerRun(t, store, "--image", busyboxImage, "--agent", "gemini", "s1", "--", "sh", "-c", `echo "$GEMINI_CLI_HOME"`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "/session\n", r.stdout)
}
