package e2e

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/e2e/openaistub"
)

// TestCodexResumesFromAnyCwd: the Codex CLI keeps its sessions in the session's .codex (CODEX_HOME), files them by
// date, and resumes one by id from any cwd; --last looks only at the cwd's own sessions unless --all.
func TestCodexResumesFromAnyCwd(t *testing.T) {
	codex := agentCLI(t, "codex")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	mount(t, store)
	api, err := openaistub.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { api.Close() })
	// A provider of its own: the stub speaks the Responses API over HTTP (no WebSocket), with this key.
	provider := []string{"-c", `model_provider="stub"`, "-c", `model_providers.stub={name="stub",base_url="` + api.URL +
		`",wire_api="responses",env_key="OPENAI_API_KEY",supports_websockets=false}`}
	env := agentEnv(t, "OPENAI_API_KEY=sk-test")
	run := func(args ...string) []string {
		return append(append([]string{codex, "exec", "--skip-git-repo-check"}, provider...), args...)
	}

	r := agentExec(t, store, "codex", env, "", run("hello from the workspace")...)
	require.Equal(t, 0, r.code, "%s\n%s\nstub saw %v", r.stdout, r.stderr, api.Paths())
	assert.Contains(t, r.stdout, openaistub.Reply)
	files := glob(t, filepath.Join(store, "sessions", "s1", ".codex", "sessions", "*", "*", "*", "rollout-*.jsonl"))
	require.Len(t, files, 1, "the rollout lands in the session's .codex, in the store")
	id := codexRollout.FindStringSubmatch(files[0])[1]
	n := lines(t, files[0])

	outside := t.TempDir()
	out, err := agentOutside(t, store, "codex", outside, env, run("resume", id, "again from outside")...)
	require.NoError(t, err, out)
	assert.Contains(t, out, openaistub.Reply)
	assert.Len(t, glob(t, filepath.Join(store, "sessions", "s1", ".codex", "sessions", "*", "*", "*", "rollout-*.jsonl")), 1,
		"resume by id continues the same file")
	assert.Greater(t, lines(t, files[0]), n)
	n = lines(t, files[0])

	// --last --all takes the newest session whatever its cwd; --last alone only the cwd's, so from a cwd that never
	// ran Codex it starts a new one.
	other := t.TempDir()
	out, err = agentOutside(t, store, "codex", other, env, run("resume", "--last", "--all", "and the newest")...)
	require.NoError(t, err, out)
	assert.Greater(t, lines(t, files[0]), n, "--last --all continued it")
	out, err = agentOutside(t, store, "codex", t.TempDir(), env, run("resume", "--last", "from a fresh cwd")...)
	require.NoError(t, err, out)
	assert.Len(t, glob(t, filepath.Join(store, "sessions", "s1", ".codex", "sessions", "*", "*", "*", "rollout-*.jsonl")), 2,
		"--last without --all filters by cwd: a new session")

	session, agent := findAgent(t, store, id)
	assert.Equal(t, "s1", session)
	assert.Equal(t, "codex", agent)
	assert.Equal(t, "hello from the workspace", shownConversations(t, store)["codex/"+id])
}
