package pi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/agentstest"
	"github.com/sessionfs/sessionfs/layout"
)

// testdata/session.jsonl is a pi 1.6.0 session file as its session-manager.js writes it (version 3;
// docs/session-format.md and docs/message-types.md of the package): the header, the model and thinking level, the
// system prompt, a prompt, a reply that calls a tool, its result, a reply, a command the user ran with !, a
// compaction, a branch summary, a failed reply, a name, and a second prompt given as a plain string. agents/text
// reads it too.
func session(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/session.jsonl")
	require.NoError(t, err)
	return string(b)
}

// SessionFile is testdata/session.jsonl's name, as pi names a session file: <the time it began>_<its id>.jsonl.
const SessionFile = "2026-12-02T14-00-00-000Z_019ae0c4-7b2a-7c3e-9f10-2b3c4d5e6f70.jsonl"

// The folder names pi 1.6.0 gives a cwd (getDefaultSessionDirPath): "--", the path without its leading '/', every
// '/', '\' and ':' as '-', "--"; nothing else changed, nothing truncated.
func TestFolder(t *testing.T) {
	assert.Equal(t, "--session-workspace--", Folder(agents.CanonicalCwd))
	assert.Equal(t, "--tmp-px-ws-sub--", Folder("/tmp/px/ws/sub"))
	assert.Equal(t, "----", Folder("/"))
	assert.Equal(t, "--home-u-My Proj.2-café😀--", Folder("/home/u/My Proj.2/café😀"), "kept as it is")
	assert.Equal(t, "--C--Users-u--", Folder(`C:\Users\u`))
	assert.Equal(t, "--a-b--", Folder("/a:b"))
	long := "/" + strings.Repeat("x", 300)
	assert.Len(t, Folder(long), 304, "never truncated")
}

// Every name Folder makes is a view; nothing else in sessions/ is.
func TestIsFolder(t *testing.T) {
	for _, cwd := range []string{"/", agents.CanonicalCwd, "/tmp/a b/c", "/x/--y--", "/home/u/café"} {
		assert.True(t, IsFolder(Folder(cwd)), cwd)
	}
	for _, name := range []string{"", "-", "--", "---", "session-workspace", "--session-workspace", "session--",
		SessionFile, ".", "..", "--a\x00--"} {
		assert.False(t, IsFolder(name), "%q", name)
	}
	require.Len(t, Agent.Views, 1)
	assert.Equal(t, "sessions", Agent.Views[0].Dir)
	assert.Equal(t, "--session-workspace--", Agent.Views[0].Canonical)
	assert.False(t, Agent.Views[0].Only, "other names pass through as the folder's own")
}

func TestFileName(t *testing.T) {
	m := Agent.Files.Name.FindStringSubmatch(SessionFile)
	require.NotNil(t, m)
	assert.Equal(t, "019ae0c4-7b2a-7c3e-9f10-2b3c4d5e6f70", m[1])
	m = Agent.Files.Name.FindStringSubmatch("2026-12-02T14-00-00-000Z_my.id-1.jsonl")
	require.NotNil(t, m, "an id given with --session-id")
	assert.Equal(t, "my.id-1", m[1])
	for _, name := range []string{"x.jsonl", "2026-12-02T14-00-00-000Z_.jsonl", "2026-12-02T14-00-00-000Z_-a.jsonl",
		"2026-12-02T14-00-00-000Z_a.jsonl.tmp", "2026-12-02T14-00-00Z_a.jsonl", "2026-12-02T14-00-00-000Z_a/b.jsonl"} {
		assert.Nil(t, Agent.Files.Name.FindStringSubmatch(name), name)
	}
}

func TestEnvAndHome(t *testing.T) {
	assert.Equal(t, []string{"PI_CODING_AGENT_DIR=/session/.pi", "PI_CODING_AGENT_SESSION_DIR="}, Agent.Env("/session"),
		"pi's folder is .pi; a caller's PI_CODING_AGENT_SESSION_DIR is emptied (pi ignores an empty one)")
	env := agents.SessionEnv([]string{"PI_CODING_AGENT_SESSION_DIR=/elsewhere", "HOME=/h"}, "s1", "/session", Agent)
	assert.Contains(t, env, "PI_CODING_AGENT_SESSION_DIR=")
	assert.NotContains(t, env, "PI_CODING_AGENT_SESSION_DIR=/elsewhere")

	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PI_CODING_AGENT_DIR", "")
	got, err := Agent.Home()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(home, ".pi", "agent"), got, "pi's own default")
	t.Setenv("PI_CODING_AGENT_DIR", "/x/pi")
	got, err = Agent.Home()
	require.NoError(t, err)
	assert.Equal(t, "/x/pi", got)
}

func TestAsksTurn(t *testing.T) {
	for _, args := range [][]string{{"-p", "hi"}, {"--print", "hi"}, {"--continue", "-p", "hi"}, {"-p", "--", "--no-session"}} {
		assert.True(t, Agent.AsksTurn(args), "%v", args)
	}
	for _, args := range [][]string{nil, {"hi"}, {"-p", "--no-session", "hi"}, {"-p", "--help"}, {"--", "-p"}, {"--continue"}} {
		assert.False(t, Agent.AsksTurn(args), "%v", args)
	}
}

func write(t *testing.T, root, rel, body string) {
	t.Helper()
	p := filepath.Join(root, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
}

func TestConversations(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	write(t, root, ".pi/sessions/--session-workspace--/"+SessionFile, session(t)+"not json\n")
	write(t, root, ".pi/sessions/--session-workspace--/notes.txt", "not a session")
	cs, err := Agent.Conversations(sess)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	c := cs[0]
	assert.Equal(t, "pi", c.Agent)
	assert.Equal(t, "019ae0c4-7b2a-7c3e-9f10-2b3c4d5e6f70", c.ID)
	assert.Equal(t, "the aardvark in the workspace", c.FirstPrompt)
	assert.Equal(t, 5, c.Messages, "user and assistant messages, not the system prompt, results or commands")
	assert.Equal(t, []string{"/session/workspace"}, c.Cwds)
	assert.Equal(t, 1, c.Malformed)
	assert.Equal(t, time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC), c.First.UTC())
	assert.Equal(t, time.Date(2026, 12, 2, 14, 0, 10, 0, time.UTC), c.Last.UTC())
	assert.Equal(t, 1, Agent.CountConversations(sess))

	a, conv, ok := agents.FileOf([]*agents.Agent{Agent}, ".pi/sessions/--tmp-x--/"+SessionFile)
	assert.True(t, ok)
	assert.Same(t, Agent, a)
	assert.Equal(t, "019ae0c4", conv)
	_, _, ok = agents.FileOf([]*agents.Agent{Agent}, ".pi/sessions/"+SessionFile)
	assert.False(t, ok, "a session file is in a cwd's folder")
}

// A string content is the prompt; the first prompt is bounded.
func TestFirstPromptOfAString(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	big := strings.Repeat("é", 20<<10)
	write(t, root, ".pi/sessions/--w--/"+SessionFile, `{"type":"session","version":3,"id":"x","timestamp":"2026-12-02T14:00:00.000Z","cwd":"/w"}
{"type":"message","id":"a","parentId":null,"timestamp":"2026-12-02T14:00:01.000Z","message":{"role":"user","content":"`+big+`","timestamp":1}}
`)
	cs, err := Agent.Conversations(sess)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	assert.LessOrEqual(t, len(cs[0].FirstPrompt), maxPrompt)
	assert.True(t, strings.HasPrefix(big, cs[0].FirstPrompt))
}

// watch's lines: prompts, replies with their tool calls, results and commands; the rest is no message.
func TestLine(t *testing.T) {
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(session(t)), "\n") {
		_, role, parts, err := line([]byte(l))
		require.NoError(t, err)
		if role != "" {
			got = append(got, role+": "+strings.Join(parts, " | "))
		}
	}
	assert.Equal(t, []string{
		"user: the aardvark in the workspace",
		`assistant: Let me look. | → bash({"command":"ls -la","timeout":5})`,
		"user: ← bash result",
		"assistant: stub reply",
		"user: ! make",
		"assistant: ",
		"user: the badger, as a string",
	}, got)
	_, role, _, err := line([]byte("{"))
	assert.Error(t, err)
	assert.Empty(t, role)
}

// auth.json counts as code only for the commands among its values; the keys are no code.
func TestAuthCommands(t *testing.T) {
	part, ok := commands([]byte(`{"anthropic":{"type":"api_key","key":"sk-ant-1"},"openai":{"type":"oauth","access":"t","refresh":"r"}}`))
	assert.True(t, ok)
	assert.Nil(t, part, "keys and tokens: nothing to approve")
	part, ok = commands([]byte(`{"anthropic":{"type":"api_key","key":"!op read secret"}}`))
	assert.True(t, ok)
	assert.Contains(t, string(part), `"/anthropic/key": "!op read secret"`)
	_, ok = commands([]byte(`{`))
	assert.False(t, ok, "bytes that do not parse count whole")
	part, ok = settings([]byte(`{"theme":"dark","defaultModel":"x","lastChangelogVersion":"1.6.0"}`))
	assert.True(t, ok)
	assert.Nil(t, part, "what pi writes itself or only picks a look")
	part, ok = settings([]byte(`{"theme":"dark","packages":["npm:evil"]}`))
	assert.True(t, ok)
	assert.Contains(t, string(part), "npm:evil")
}

// The views are served under .pi/sessions; nothing of pi's lives outside .pi.
func TestLayout(t *testing.T) {
	assert.Equal(t, ".pi", Agent.Dir)
	assert.Equal(t, []string{"sessions"}, Agent.Records)
	assert.NotEqual(t, layout.ProjectsDir, Agent.Dir+"/"+Agent.Views[0].Dir, "not the store's transcript folder")
}

// testdata/real.jsonl is what the real pi 1.6.0 wrote (TestPiResumesFromAnyCwd, offline against e2e/openaistub; the
// test's folders renamed): begun in the workspace through the mount, continued from its subfolder, by sessionfs
// resume, and from a folder outside the session. pi declares each cwd it goes on in as a system message.
func TestRealSession(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	b, err := os.ReadFile("testdata/real.jsonl")
	require.NoError(t, err)
	write(t, root, ".pi/sessions/--session-workspace--/2026-12-02T14-17-04-911Z_01a2371d-ba89-744f-beeb-158b6988459b.jsonl", string(b))
	cs, err := Agent.Conversations(sess)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	c := cs[0]
	assert.Equal(t, "01a2371d-ba89-744f-beeb-158b6988459b", c.ID)
	assert.Equal(t, "the aardvark in the workspace", c.FirstPrompt)
	assert.Equal(t, 8, c.Messages)
	assert.Zero(t, c.Malformed)
	ws := "/home/u/agent-sessions/sessions/s1/workspace"
	assert.Equal(t, []string{ws, ws + "/sub", "/tmp/elsewhere"}, c.Cwds)
}

func TestCwd(t *testing.T) {
	assert.Equal(t, "/a b/c", Cwd("<cwd>\n/a b/c\n</cwd>"))
	for _, s := range []string{"", "/a", "<cwd>/a", "/a</cwd>"} {
		assert.Empty(t, Cwd(s), s)
	}
}

// import --agent pi: the sessions of ~/.pi/agent, filed under the cwd each began in, land in the workspace's
// folder of the session's .pi with their times, the cwds they ran in recorded; --project keeps those of a folder.
func TestImport(t *testing.T) {
	from := t.TempDir()
	name := "2026-12-02T14-17-04-911Z_01a2371d-ba89-744f-beeb-158b6988459b.jsonl"
	b, err := os.ReadFile("testdata/real.jsonl")
	require.NoError(t, err)
	write(t, from, "sessions/--home-u-agent-sessions-sessions-s1-workspace--/"+name, string(b))
	store, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)

	rep, err := agents.Import(store, agents.ImportOptions{Agent: Agent, From: from, Project: "/elsewhere"})
	require.NoError(t, err)
	assert.Empty(t, rep.Imported, "begun elsewhere")
	rep, err = agents.Import(store, agents.ImportOptions{Agent: Agent, From: from, Into: "s", Project: "/tmp/elsewhere"})
	require.NoError(t, err)
	assert.Equal(t, []string{"01a2371d-ba89-744f-beeb-158b6988459b"}, rep.Imported, "it went on in /tmp/elsewhere")
	orig, err := os.Stat(filepath.Join(from, "sessions", "--home-u-agent-sessions-sessions-s1-workspace--", name))
	require.NoError(t, err)
	got, err := os.Stat(filepath.Join(store.Dir("s"), ".pi", "sessions", "--session-workspace--", name))
	require.NoError(t, err)
	assert.Equal(t, orig.ModTime(), got.ModTime())
	m, err := store.Get("s")
	require.NoError(t, err)
	assert.Contains(t, m.Cwds, "/home/u/agent-sessions/sessions/s1/workspace/sub")

	sess, err := store.OpenSession("s")
	require.NoError(t, err)
	defer sess.Close()
	cs, err := Agent.Conversations(sess)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	assert.Equal(t, "the aardvark in the workspace", cs[0].FirstPrompt)
	rep, err = agents.Import(store, agents.ImportOptions{Agent: Agent, From: from, Into: "s"})
	require.NoError(t, err)
	assert.Len(t, rep.Unchanged, 1, "nothing new")
}
