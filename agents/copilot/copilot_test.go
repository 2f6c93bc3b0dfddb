package copilot

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

// testdata/real.jsonl is the events.jsonl the real Copilot CLI 1.0.102 wrote (offline against e2e/openaistub, in
// /tmp/research/copilot): begun in A, continued with --continue from A/sub and from B, then resumed with --resume
// ID from B, which took it back to A (the resume's auto-cd). testdata/tool.jsonl is a session begun in C whose
// reply called the bash tool (a stub that streams a tool call). agents/text reads them too.
const (
	realID = "36e50d69-d228-4e9a-8561-0d1053620d65"
	toolID = "5f54cec9-9007-47ac-9005-c0c30ede4d69"
)

func testdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return string(b)
}

func write(t *testing.T, root, rel, body string) {
	t.Helper()
	p := filepath.Join(root, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
}

// A session's folder is its id, a uuid; its events.jsonl is the conversation; nothing else there is one.
func TestNames(t *testing.T) {
	f := Agent.Files
	for _, name := range []string{realID, "11111111-2222-4333-8444-555555555555"} {
		m := f.IDFolder.FindStringSubmatch(name)
		require.NotNil(t, m, name)
		assert.Equal(t, name, m[1])
	}
	for _, name := range []string{"", ".session-operation-locks", realID + ".lock", strings.ToUpper(realID), realID[:35],
		realID + "0", "../" + realID, "x" + realID} {
		assert.Nil(t, f.IDFolder.FindStringSubmatch(name), "%q", name)
	}
	assert.True(t, f.Name.MatchString("events.jsonl"))
	for _, name := range []string{"workspace.yaml", "events.jsonl.tmp", "xevents.jsonl", "events.json"} {
		assert.False(t, f.Name.MatchString(name), name)
	}
}

func TestEnvAndHome(t *testing.T) {
	assert.Equal(t, []string{"COPILOT_HOME=/session/.copilot"}, Agent.Env("/session"), "COPILOT_HOME names the folder itself")
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("COPILOT_HOME", "")
	got, err := Agent.Home()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(home, ".copilot"), got, "Copilot's own default")
	t.Setenv("COPILOT_HOME", "/x/copilot")
	got, err = Agent.Home()
	require.NoError(t, err)
	assert.Equal(t, "/x/copilot", got)
	assert.Equal(t, []string{"copilot", "--resume", realID}, Agent.Resume(realID))
}

func TestAsksTurn(t *testing.T) {
	for _, args := range [][]string{{"-p", "hi"}, {"--prompt", "hi"}, {"--prompt=hi"}, {"-phi"}, {"--continue", "-p", "hi"},
		{"--resume", realID, "-p", "hi"}, {"-p", "hi", "--allow-all-tools", "--no-auto-update"}} {
		assert.True(t, Agent.AsksTurn(args), "%v", args)
	}
	for _, args := range [][]string{nil, {"hi"}, {"--continue"}, {"-i", "hi"}, {"-p", "--help"}, {"--version", "-p", "x"},
		{"--", "-p"}, {"mcp", "list", "-p"}, {"sessions", "-p", "x"}} {
		assert.False(t, Agent.AsksTurn(args), "%v", args)
	}
}

// The real session: one conversation, its id the folder's name, the cwd of each of its four runs once, every
// prompt and reply counted; the folder's other files, the operation locks beside the sessions and a folder that is
// not a session's id are no conversations.
func TestRealSession(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	dir := ".copilot/session-state/" + realID
	write(t, root, dir+"/events.jsonl", testdata(t, "real.jsonl"))
	write(t, root, dir+"/workspace.yaml", "id: "+realID+"\ncwd: /tmp/research/copilot/A\n")
	write(t, root, dir+"/checkpoints/index.md", "# Checkpoints\n")
	write(t, root, ".copilot/session-state/.session-operation-locks/"+realID+".lock", "")
	write(t, root, ".copilot/session-state/not-a-session/events.jsonl", testdata(t, "tool.jsonl"))
	write(t, root, ".copilot/session-state/events.jsonl", testdata(t, "tool.jsonl"))
	cs, err := Agent.Conversations(sess)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	c := cs[0]
	assert.Equal(t, "copilot", c.Agent)
	assert.Equal(t, realID, c.ID)
	assert.Equal(t, "hello from A", c.FirstPrompt)
	assert.Equal(t, 8, c.Messages, "four prompts and four replies; not the system prompt Copilot sends with each")
	assert.Zero(t, c.Malformed)
	assert.Equal(t, []string{"/tmp/research/copilot/A", "/tmp/research/copilot/A/sub", "/tmp/research/copilot/B"}, c.Cwds)
	assert.Equal(t, time.Date(2026, 12, 3, 7, 15, 45, 664e6, time.UTC), c.First.UTC())
	assert.Equal(t, time.Date(2026, 12, 3, 7, 15, 58, 415e6, time.UTC), c.Last.UTC())
	assert.Equal(t, 1, Agent.CountConversations(sess))

	a, conv, ok := agents.FileOf([]*agents.Agent{Agent}, dir+"/events.jsonl")
	assert.True(t, ok)
	assert.Same(t, Agent, a)
	assert.Equal(t, "36e50d69", conv)
	for _, rel := range []string{dir + "/workspace.yaml", ".copilot/session-state/events.jsonl",
		".copilot/session-state/not-a-session/events.jsonl", dir + "/files/events.jsonl"} {
		_, _, ok = agents.FileOf([]*agents.Agent{Agent}, rel)
		assert.False(t, ok, rel)
	}
}

// watch's lines of a session whose reply called a tool: the prompt, the call, its result, the reply; the rest
// (the start, the system prompt, turns, usage, the shutdown) is no message.
func TestLine(t *testing.T) {
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(testdata(t, "tool.jsonl")), "\n") {
		_, role, parts, err := line([]byte(l))
		require.NoError(t, err)
		if role != "" {
			got = append(got, role+": "+strings.Join(parts, " | "))
		}
	}
	assert.Equal(t, []string{
		"user: RUNENV please",
		`assistant: → bash({"command":"env | sort \u003e /tmp/research/copilot/childenv.txt; echo done","d…)`,
		"user: ← tool result",
		"assistant: py stub reply",
	}, got)
	_, role, _, err := line([]byte("{"))
	assert.Error(t, err)
	assert.Empty(t, role)
	_, role, parts, err := line([]byte(`{"type":"tool.execution_complete","data":{"success":false}}`))
	require.NoError(t, err)
	assert.Equal(t, "user", role)
	assert.Equal(t, []string{"← tool failed"}, parts)
}

// Every file an agent wrote is hostile: lines that do not parse are counted and passed over, a prompt of 20 MB
// is cut for the title, a content that is no string is no text, a reply of a million tool requests is read one
// request at a time and watch shows a bounded number of them.
func TestHostile(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	big := strings.Repeat("é", 10<<20)
	many := strings.Repeat(`{"toolCallId":"c","name":"bash","arguments":{"command":"ls"}},`, 1_000_000)
	reply := `{"type":"assistant.message","data":{"content":"x","toolRequests":[` + many + `1]},"timestamp":"2026-12-03T07:00:02Z"}`
	write(t, root, ".copilot/session-state/"+realID+"/events.jsonl", strings.Join([]string{
		`{"type":"session.start","data":{"context":{"cwd":"/w"}},"timestamp":"2026-12-03T07:00:00Z"}`,
		`not json`,
		`{"type":"user.message","data":{"content":{"not":"a string"}},"timestamp":"2026-12-03T07:00:01Z"}`,
		`{"type":"user.message","data":{"content":"` + big + `"},"timestamp":"2026-12-03T07:00:01Z"}`,
		reply,
		`{"type":"session.resume","data":{"context":null},"timestamp":"bad time"}`,
		`{"type":"session.resume","data":{"context":"/nope"}}`,
		`[1,2,3]`,
		`{"type":"assistant.message","data":null}`,
		"",
	}, "\n"))
	cs, err := Agent.Conversations(sess)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	c := cs[0]
	assert.Equal(t, 4, c.Malformed, "not json, a bad time, a context that is no object, a list")
	assert.Equal(t, []string{"/w"}, c.Cwds)
	assert.LessOrEqual(t, len(c.FirstPrompt), maxPrompt)
	assert.True(t, strings.HasPrefix(big, c.FirstPrompt), "the first prompt that is a string")
	assert.Equal(t, 4, c.Messages)

	_, role, parts, err := line([]byte(reply))
	require.NoError(t, err)
	assert.Equal(t, "assistant", role)
	assert.Len(t, parts, agents.MaxWatchParts)
	assert.Equal(t, "x", parts[0])
	_, _, parts, err = line([]byte(`{"type":"user.message","data":{"content":"` + big + `"}}`))
	require.NoError(t, err)
	assert.LessOrEqual(t, len(parts[0]), agents.MaxWatchParts*200)
}

// settings.json counts as code but for what only picks a look or a model and what Copilot writes itself; its hooks
// and status line command count.
func TestSettings(t *testing.T) {
	part, ok := settings([]byte(`{"theme":"dim","model":"gpt-5","trustedFolders":["/w"],"footer":{"showBranch":true},"banner":"never"}`))
	assert.True(t, ok)
	assert.Nil(t, part, "nothing to approve")
	part, ok = settings([]byte(`{"theme":"dim","statusLine":{"type":"command","command":"~/bin/status"}}`))
	assert.True(t, ok)
	assert.Contains(t, string(part), "~/bin/status")
	part, ok = settings([]byte(`{"hooks":{"sessionStart":[{"type":"command","bash":"curl evil"}]}}`))
	assert.True(t, ok)
	assert.Contains(t, string(part), "curl evil")
	_, ok = settings([]byte("// a comment\n{}"))
	assert.False(t, ok, "bytes that do not parse count whole")

	paths := map[string]bool{}
	for _, c := range Agent.Code {
		paths[c.Path] = c.Project
	}
	for _, p := range []string{"settings.json", "mcp-config.json", "lsp-config.json", "hooks", "agents", "skills",
		"installed-plugins", "extensions"} {
		project, ok := paths[p]
		assert.True(t, ok && !project, p)
	}
	for _, p := range []string{".github/hooks", ".github/copilot/settings.json", ".github/copilot/settings.local.json",
		".mcp.json", ".github/mcp.json", ".github/extensions"} {
		assert.True(t, paths[p], p)
	}
	assert.NotContains(t, paths, "config.json", "Copilot's own state and the login, not code")
}

// The login's files are credentials; the conversations are recorded in session-state.
func TestLayout(t *testing.T) {
	assert.Equal(t, ".copilot", Agent.Dir)
	assert.Equal(t, []string{"config.json", "mcp-oauth-config/*", "providers.json"}, Agent.Credentials)
	assert.Equal(t, []string{"session-state"}, Agent.Records)
	assert.Empty(t, Agent.Views, "nothing of Copilot's is named after a cwd")
	assert.NotEqual(t, layout.ProjectsDir, Agent.Dir+"/"+Agent.Files.Dir)
	assert.Contains(t, Agent.ChildVars, "COPILOT_AGENT_SESSION_ID")
}

// import --agent copilot: the sessions of ~/.copilot land in the session's .copilot, each in its id's folder,
// with its time; --project keeps those that ran in a folder.
func TestImport(t *testing.T) {
	from := t.TempDir()
	write(t, from, "session-state/"+realID+"/events.jsonl", testdata(t, "real.jsonl"))
	write(t, from, "session-state/"+toolID+"/events.jsonl", testdata(t, "tool.jsonl"))
	store, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)

	rep, err := agents.Import(store, agents.ImportOptions{Agent: Agent, From: from, Into: "s", Project: "/tmp/research/copilot/B"})
	require.NoError(t, err)
	assert.Equal(t, []string{realID}, rep.Imported, "it went on in B")
	orig, err := os.Stat(filepath.Join(from, "session-state", realID, "events.jsonl"))
	require.NoError(t, err)
	got, err := os.Stat(filepath.Join(store.Dir("s"), ".copilot", "session-state", realID, "events.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, orig.ModTime(), got.ModTime())
	assert.NoFileExists(t, filepath.Join(store.Dir("s"), ".copilot", "session-state", toolID, "events.jsonl"))
}
