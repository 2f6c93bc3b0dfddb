package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	qwenagent "github.com/sessionfs/sessionfs/agents/qwen"
	"github.com/sessionfs/sessionfs/e2e/openaistub"
)

// TestQwenKeepsChatsInTheSession: Qwen Code files chats under projects/<sanitized cwd>/chats of the session's .qwen
// (QWEN_HOME), and through the mount that folder is a view of the session's one folder from any cwd. But Qwen also
// binds each chat to the cwd it started in (the first line's cwd must hash like the current one), so it resumes
// only from that cwd: from another one it says "No saved session found" although the file is right there, and
// --continue starts a new chat. The test checks both halves.
func TestQwenKeepsChatsInTheSession(t *testing.T) {
	qwen := agentCLI(t, "qwen")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	api, err := openaistub.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { api.Close() })
	env := agentEnv(t, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+api.URL, "OPENAI_MODEL=stub-model")
	run := func(args ...string) []string { return append([]string{qwen, "--auth-type", "openai"}, args...) }

	r := agentExec(t, store, "qwen", env, "", run("hello from the workspace")...)
	require.Equal(t, 0, r.code, "%s\n%s\nstub saw %v", r.stdout, r.stderr, api.Paths())
	assert.Contains(t, r.stdout, openaistub.Reply)
	chats := filepath.Join(store, "sessions", "s1", ".qwen", "projects", qwenagent.Folder(agents.CanonicalCwd), "chats")
	files := glob(t, filepath.Join(chats, "*.jsonl"))
	require.Len(t, files, 1, "the chat lands in the canonical folder, in the store")
	id := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
	n := lines(t, files[0])

	r = agentExec(t, store, "qwen", env, "", run("--resume", id, "again from the workspace")...)
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Greater(t, lines(t, files[0]), n, "resumed from its own cwd through the mount")
	n = lines(t, files[0])
	// "sessionfs resume ID" runs Qwen's own resume in the session's workspace, the chat's cwd.
	r = cliWith(t, store, "", withPath(env, qwen), nil, "resume", id, "--", "--auth-type", "openai", "via sessionfs resume")
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Greater(t, lines(t, files[0]), n, "resumed by sessionfs resume")
	n = lines(t, files[0])

	outside := t.TempDir()
	view := filepath.Join(m.session("s1"), ".qwen", "projects", qwenagent.Folder(outside), "chats", id+".jsonl")
	assert.FileExists(t, view, "the mount shows the chat in the folder of the other cwd")
	out, _ := agentOutside(t, store, "qwen", outside, env, run("--resume", id, "from outside")...)
	assert.Contains(t, out, "No saved session found", "Qwen refuses a chat begun in another cwd")
	assert.Equal(t, n, lines(t, files[0]))
	out, err = agentOutside(t, store, "qwen", outside, env, run("--continue", "continue from outside")...)
	require.NoError(t, err, out)
	assert.Len(t, glob(t, filepath.Join(chats, "*.jsonl")), 2, "--continue from another cwd starts a new chat")

	session, agent := findAgent(t, store, id)
	assert.Equal(t, "s1", session)
	assert.Equal(t, "qwen", agent)
	assert.Equal(t, "hello from the workspace", shownConversations(t, store)["qwen/"+id])
}
