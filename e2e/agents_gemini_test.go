package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	geminiagent "github.com/sessionfs/sessionfs/agents/gemini"
	"github.com/sessionfs/sessionfs/e2e/geministub"
)

// TestGeminiResumesFromAnyCwd: Gemini CLI names a project folder after the cwd (through projects.json and a claim
// file in it); through the mount every such name is a view of the session's one project folder, each keeping its
// own claim, so a chat started in the workspace resumes from a subfolder and from outside the session.
func TestGeminiResumesFromAnyCwd(t *testing.T) {
	gemini := agentCLI(t, "gemini")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	api, err := geministub.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { api.Close() })
	geminiSetup(t, store, m.session("s1"))
	env := agentEnv(t, "GEMINI_API_KEY=test", "GOOGLE_GEMINI_BASE_URL="+api.URL)
	run := func(args ...string) []string {
		return append([]string{gemini, "-m", "gemini-2.5-flash"}, args...)
	}

	r := agentExec(t, store, "gemini", env, "", run("-p", "hello from the workspace")...)
	require.Equal(t, 0, r.code, "%s\n%s\nstub saw %v", r.stdout, r.stderr, api.Paths())
	assert.Contains(t, r.stdout, geministub.Reply)
	tmp := filepath.Join(store, "sessions", "s1", ".gemini", "tmp")
	chats := filepath.Join(tmp, "workspace", "chats")
	files := glob(t, filepath.Join(chats, "session-*.jsonl"))
	require.Len(t, files, 1, "the chat lands in the canonical project folder, in the store")
	var head struct{ SessionID string }
	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(strings.SplitN(string(b), "\n", 2)[0]), &head))
	id := head.SessionID
	n := len(strings.Split(geminiChat(t, chats, id), "\n"))
	// The mount's workspace path got a name of its own ("workspace" is /session/workspace's): a view, holding only
	// its claim in the store.
	ws := filepath.Join(m.session("s1"), "workspace")
	claims := glob(t, filepath.Join(tmp, "*", geminiagent.Owner))
	var owners []string
	for _, c := range claims {
		b, _ := os.ReadFile(c)
		owners = append(owners, string(b))
	}
	assert.ElementsMatch(t, []string{"/session/workspace", ws}, owners, "each name keeps its own claim")

	// From a subfolder of the workspace (exec -w) and from outside the session, by id and as "latest".
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "pkg"), 0o755))
	r = agentExec(t, store, "gemini", env, "pkg", run("--resume", id, "-p", "again from a subfolder")...)
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.NotContains(t, r.stdout+r.stderr, "No previous sessions")
	assert.Greater(t, len(strings.Split(geminiChat(t, chats, id), "\n")), n, "the same chat grows")
	outside := t.TempDir()
	out, err := agentOutside(t, store, "gemini", outside, env, run("--skip-trust", "--resume", "latest", "-p", "again from outside")...)
	require.NoError(t, err, out)
	assert.Contains(t, out, geministub.Reply)
	assert.NotContains(t, out, "No previous sessions")
	assert.Contains(t, geminiChat(t, chats, id), "again from outside", "the resumed turn is in the session's chat")
	for _, f := range glob(t, filepath.Join(chats, "session-*.jsonl")) {
		b, _ := os.ReadFile(f)
		assert.Contains(t, strings.SplitN(string(b), "\n", 2)[0], id, "no other conversation was started")
	}

	session, agent := findAgent(t, store, id)
	assert.Equal(t, "s1", session)
	assert.Equal(t, "gemini", agent)
	assert.Equal(t, "hello from the workspace", shownConversations(t, store)["gemini/"+id])

	// rm -rf of the agent's folder through the mount removes it, views and claims included.
	require.NoError(t, os.RemoveAll(filepath.Join(m.session("s1"), ".gemini")))
	assert.NoDirExists(t, filepath.Join(store, "sessions", "s1", ".gemini"))
}

// geminiChat is the content of chat id's files in folder chats. Gemini names a chat's file
// session-<minute>-<short id>.jsonl: a resume in a later minute writes the same chat to a new file.
func geminiChat(t *testing.T, chats, id string) string {
	t.Helper()
	var all string
	for _, f := range glob(t, filepath.Join(chats, "session-*.jsonl")) {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		if strings.Contains(strings.SplitN(string(b), "\n", 2)[0], id) {
			all += string(b)
		}
	}
	return all
}

// TestGeminiWithoutMountResumeFails is the control: on the plain store, the chat is not found from another cwd;
// once the store is mounted, it is.
func TestGeminiWithoutMountResumeFails(t *testing.T) {
	gemini := agentCLI(t, "gemini")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	api, err := geministub.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { api.Close() })
	geminiSetup(t, store, filepath.Join(store, "sessions", "s1"))
	env := agentEnv(t, "GEMINI_API_KEY=test", "GOOGLE_GEMINI_BASE_URL="+api.URL)
	r := agentExec(t, store, "gemini", env, "", gemini, "-m", "gemini-2.5-flash", "-p", "hello")
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	first := glob(t, filepath.Join(store, "sessions", "s1", ".gemini", "tmp", "*", "chats", "session-*.jsonl"))
	require.Len(t, first, 1)
	var head struct{ SessionID string }
	b, err := os.ReadFile(first[0])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(strings.SplitN(string(b), "\n", 2)[0]), &head))
	out, _ := agentOutside(t, store, "gemini", t.TempDir(), env, gemini, "--skip-trust", "-m", "gemini-2.5-flash", "--resume", "latest", "-p", "x")
	assert.Contains(t, out, "No previous sessions found for this project")

	// (Gemini then ran "x" as a new chat of that cwd's project.) Mounted afterwards: the chats Gemini filed under
	// the store path's and that cwd's project names are folded into the canonical folder the first time a view is
	// looked up, and resume from anywhere.
	mount(t, store)
	out, err = agentOutside(t, store, "gemini", t.TempDir(), env, gemini, "--skip-trust", "-m", "gemini-2.5-flash", "--resume", head.SessionID, "-p", "after mounting")
	require.NoError(t, err, out)
	assert.NotContains(t, out, "No previous sessions")
	// Gemini names a chat's file session-<minute>-<short id>: a resume in a later minute writes a new file of the
	// same chat, so chats are counted by id.
	files := glob(t, filepath.Join(store, "sessions", "s1", ".gemini", "tmp", "workspace", "chats", "session-*.jsonl"))
	chats := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		id := f[strings.LastIndex(f, "-")+1:]
		chats[id] += string(b)
	}
	assert.Len(t, chats, 2, "both chats, folded into the canonical folder: %v", files)
	firstID := first[0][strings.LastIndex(first[0], "-")+1:]
	assert.Contains(t, chats[firstID], "after mounting", "the first chat was resumed")
	assert.Len(t, glob(t, filepath.Join(store, "sessions", "s1", ".gemini", "tmp", "*", "chats")), 1, "no chats left under other names")
}
