package kimi

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/agentstest"
	"github.com/sessionfs/sessionfs/layout"
)

// testdata/wire.jsonl and state.json are a conversation Kimi Code 2.1.0 wrote, offline against a stub, in
// /tmp/research/kimi/A: a prompt, a reply that runs a shell command, its result, and a reply in text.
const (
	id     = "session_018507bd-ba8a-4c29-a52c-a2d9dc4f7253"
	bucket = "wd_a_95ff0dd53803"
)

// plant puts the testdata conversation into a session the way Kimi files it, and returns its folder.
func plant(t *testing.T, root string) string {
	t.Helper()
	dir := filepath.Join(root, ".kimi-code", "sessions", bucket, id)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "agents", "main"), 0o700))
	for src, dst := range map[string]string{"testdata/wire.jsonl": "agents/main/wire.jsonl", "testdata/state.json": "state.json"} {
		b, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, dst), b, 0o600))
	}
	return dir
}

func TestConversations(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	plant(t, root)
	// A subagent's wire, a file beside main's, and a folder not named as Kimi names a session are no conversation.
	sub := filepath.Join(root, ".kimi-code", "sessions", bucket, id, "agents", "sub-1")
	require.NoError(t, os.MkdirAll(sub, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(sub, "wire.jsonl"), []byte(`{"type":"turn.prompt","input":[{"type":"text","text":"x"}]}`+"\n"), 0o600))
	other := filepath.Join(root, ".kimi-code", "sessions", bucket, "session_x", "agents", "main")
	require.NoError(t, os.MkdirAll(other, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(other, "wire.jsonl"), nil, 0o600))

	cs, err := Agent.Conversations(sess)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	c := cs[0]
	assert.Equal(t, id, c.ID)
	assert.Equal(t, "kimi", c.Agent)
	assert.Equal(t, "RUNENV please", c.FirstPrompt)
	assert.Equal(t, 3, c.Messages, "the prompt, the reply that called the tool, the reply in text")
	assert.Equal(t, []string{"/tmp/research/kimi/A"}, c.Cwds)
	assert.Zero(t, c.Malformed)
	assert.False(t, c.Last.IsZero())
	assert.Equal(t, 1, Agent.CountConversations(sess))

	a, conv, ok := agents.FileOf([]*agents.Agent{Agent}, ".kimi-code/sessions/"+bucket+"/"+id+"/agents/main/wire.jsonl")
	require.True(t, ok, "watch names the file's conversation")
	assert.Equal(t, Agent, a)
	assert.Equal(t, "018507bd", conv, "its short id, without session_")
	_, _, ok = agents.FileOf([]*agents.Agent{Agent}, ".kimi-code/sessions/"+bucket+"/"+id+"/agents/sub-1/wire.jsonl")
	assert.False(t, ok)
}

func TestLine(t *testing.T) {
	b, err := os.ReadFile("testdata/wire.jsonl")
	require.NoError(t, err)
	var said []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		at, role, parts, err := line([]byte(l))
		require.NoError(t, err)
		if role != "" {
			assert.False(t, at.IsZero())
			said = append(said, role+": "+strings.Join(parts, " | "))
		}
	}
	require.Len(t, said, 4, "%q", said)
	assert.Equal(t, "user: RUNENV please", said[0])
	assert.Contains(t, said[1], "assistant: → Bash(")
	assert.Equal(t, "user: ← tool result", said[2])
	assert.Equal(t, "assistant: stub reply", said[3])
}

func TestHostileLines(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	dir := plant(t, root)
	wire := filepath.Join(dir, "agents", "main", "wire.jsonl")
	f, err := os.OpenFile(wire, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("not json\n" + `{"type":"turn.prompt","input":"a string"}` + "\n" +
		`{"type":"agent.message.appended","message":{"message":{"role":"assistant","content":7,"toolCalls":{"x":1}}}}` + "\n" +
		`{"type":"turn.prompt","time":-5,"origin":{"kind":"hook"},"input":[{"text":"not the user's"}]}` + "\n" +
		`{"type":"turn.prompt","input":[` + strings.Repeat(`{"type":"text","text":"w"},`, 100000) + `{"type":"text","text":"end"}]}` + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	cs, err := Agent.Conversations(sess)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	assert.Equal(t, 1, cs[0].Malformed)
	assert.Equal(t, "RUNENV please", cs[0].FirstPrompt)
	assert.Equal(t, 6, cs[0].Messages, "the odd lines that are prompts and replies count; the hook's does not")
}

// TestFollow: a launch moves every conversation to the cwd Kimi starts in, only their state.json's cwd, and
// leaves alone what is not a conversation's small regular state.json.
func TestFollow(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	dir := plant(t, root)
	require.NoError(t, Follow(sess, "/session/workspace/sub"))
	state := agentstest.ReadJSON(t, filepath.Join(dir, "state.json"))
	assert.Equal(t, "/session/workspace/sub", state["cwd"])
	assert.Equal(t, id, state["id"], "the rest kept")
	assert.NotNil(t, state["agents"])
	st, err := os.Stat(filepath.Join(dir, "state.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	// A state.json that is a link out of the session, or a FIFO, is not read through nor replaced.
	victim := filepath.Join(t.TempDir(), "victim.json")
	require.NoError(t, os.WriteFile(victim, []byte(`{"cwd":"/untouched"}`), 0o600))
	two := filepath.Join(root, ".kimi-code", "sessions", bucket, "session_00000000-0000-0000-0000-000000000002")
	require.NoError(t, os.MkdirAll(two, 0o700))
	require.NoError(t, os.Symlink(victim, filepath.Join(two, "state.json")))
	three := filepath.Join(root, ".kimi-code", "sessions", bucket, "session_00000000-0000-0000-0000-000000000003")
	require.NoError(t, os.MkdirAll(three, 0o700))
	require.NoError(t, syscall.Mkfifo(filepath.Join(three, "state.json"), 0o600))
	err = Follow(sess, "/elsewhere")
	require.Error(t, err, "the link and the FIFO are said")
	b, rerr := os.ReadFile(victim)
	require.NoError(t, rerr)
	assert.Equal(t, `{"cwd":"/untouched"}`, string(b))
	assert.Equal(t, "/elsewhere", agentstest.ReadJSON(t, filepath.Join(dir, "state.json"))["cwd"], "the others move still")

	// No Kimi in the session: nothing to do.
	empty, _ := agentstest.OpenSession(t)
	assert.NoError(t, Follow(empty, "/x"))
}

func TestScrubConfig(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	require.NoError(t, os.MkdirAll(filepath.Join(root, ".kimi-code"), 0o700))
	cfg := "default_model = \"stub\"\n[providers.stub]\ntype = \"openai\"\nbase_url = \"http://127.0.0.1:1/v1\"\napi_key = \"sk-secret\"\n" +
		"[providers.managed]\ntype = \"kimi\"\noauth = { storage = \"file\", key = \"oauth/kimi-code\" }\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, ".kimi-code", "config.toml"), []byte(cfg), 0o600))
	out, dropped, err := scrubConfig(sess)
	require.NoError(t, err)
	assert.Equal(t, []string{"providers.managed.oauth", "providers.stub.api_key"}, dropped)
	assert.NotContains(t, string(out), "sk-secret")
	assert.Contains(t, string(out), "http://127.0.0.1:1/v1")
	require.NoError(t, os.WriteFile(filepath.Join(root, ".kimi-code", "config.toml"), []byte("api_key = = \"sk\""), 0o600))
	_, _, err = scrubConfig(sess)
	assert.Error(t, err, "what does not parse is left out, not packed")
}

func TestAsksTurn(t *testing.T) {
	assert.True(t, asksTurn([]string{"-p", "hi"}))
	assert.True(t, asksTurn([]string{"--prompt=hi", "-c"}))
	assert.False(t, asksTurn([]string{"-c"}))
	assert.False(t, asksTurn([]string{"-p", "x", "--help"}))
	assert.Equal(t, []string{"KIMI_CODE_HOME=/session/.kimi-code"}, Agent.Env("/session"))
	assert.Equal(t, []string{"kimi", "--session", id}, Agent.Resume(id))
}

// TestImport: a conversation of the user's ~/.kimi-code lands in a session as Kimi files it, its state.json beside
// it and its workspace registered (Kimi finds it by neither otherwise: "Session ... not found"); a workspaces.json
// the session has keeps its entries; a second run copies nothing.
func TestImport(t *testing.T) {
	home := t.TempDir()
	plant(t, home) // <home>/.kimi-code/sessions/...
	store, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	into := filepath.Join(store.Dir("imported"), ".kimi-code")
	opts := agents.ImportOptions{Agent: Agent, From: filepath.Join(home, ".kimi-code"), Into: "imported"}
	rep, err := agents.Import(store, opts)
	require.NoError(t, err)
	require.Equal(t, []string{id}, rep.Imported)
	conv := filepath.Join(into, "sessions", bucket, id)
	assert.FileExists(t, filepath.Join(conv, "agents", "main", "wire.jsonl"))
	assert.Equal(t, "/tmp/research/kimi/A", agentstest.ReadJSON(t, filepath.Join(conv, "state.json"))["cwd"])
	ws := agentstest.ReadJSON(t, filepath.Join(into, "workspaces.json"))["workspaces"].(map[string]any)
	assert.Equal(t, "/tmp/research/kimi/A", ws[bucket].(map[string]any)["root"])

	require.NoError(t, os.WriteFile(filepath.Join(into, "workspaces.json"),
		[]byte(`{"version":1,"workspaces":{"wd_b_1":{"root":"/b"}},"deleted_workspace_ids":[]}`), 0o600))
	require.NoError(t, os.Remove(filepath.Join(conv, "agents", "main", "wire.jsonl")))
	rep, err = agents.Import(store, opts)
	require.NoError(t, err)
	require.Equal(t, []string{id}, rep.Imported)
	all := agentstest.ReadJSON(t, filepath.Join(into, "workspaces.json"))
	assert.Len(t, all["workspaces"], 2, "the session's own workspace kept")
	assert.NotNil(t, all["deleted_workspace_ids"])
	rep, err = agents.Import(store, opts)
	require.NoError(t, err)
	assert.Equal(t, []string{id}, rep.Unchanged)
}

// TestFollowBound: a session that made more folders than a launch looks at (10,000) gets an error, not a launch
// that reads them all.
func TestFollowBound(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	sessions := filepath.Join(root, ".kimi-code", "sessions")
	for i := range maxFollowed + 1 {
		require.NoError(t, os.MkdirAll(filepath.Join(sessions, fmt.Sprintf("wd_%d_000000000000", i)), 0o700))
	}
	err := Follow(sess, "/x")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "more than 10000 folders")
}
