package text

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/agentstest"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/agents/gemini"
	"github.com/sessionfs/sessionfs/agents/opencode"
	"github.com/sessionfs/sessionfs/agents/opencode/opencodetest"
	"github.com/sessionfs/sessionfs/layout"
)

// awaited is a writer whose content a test awaits.
type awaited struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func newAwaited() *awaited { return &awaited{changed: make(chan struct{}, 1)} }

func (w *awaited) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
	return w.b.Write(p)
}

func (w *awaited) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// await waits until the output holds want, or fails after a minute.
func (w *awaited) await(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for !strings.Contains(w.String(), want) {
		select {
		case <-w.changed:
		case <-deadline:
			require.FailNow(t, "not printed", "%q not in:\n%s", want, w.String())
		}
	}
}

// follow runs Log -f of conversation c until stop, which returns its error; it is stopped before the test's
// session closes, on failure too.
func follow(t *testing.T, sess *layout.Dir, a *agents.Agent, c agents.Conversation) (*awaited, func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	out := newAwaited()
	var err error
	finished := make(chan struct{})
	go func() { err = Log(ctx, out, sess, a, c, LogOptions{Follow: true}); close(finished) }()
	stop := func() error { cancel(); <-finished; return err }
	t.Cleanup(func() { stop() })
	return out, stop
}

// TestLogFollow: log -f prints the conversation, then each line the agent appends (a half-written line once it is
// whole), and a subagent's transcript made after it started; woken by inotify (the fallback poll is off).
func TestLogFollow(t *testing.T) {
	saved := pollEvery
	pollEvery = time.Hour
	sess, c, dir := hostile(t, prompt("first"))
	t.Cleanup(func() { pollEvery = saved })
	out, stop := follow(t, sess, claude.Agent, c)
	out.await(t, "first")

	f, err := os.OpenFile(filepath.Join(dir, hostileID+".jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	defer f.Close()
	second := prompt("second")
	_, err = f.WriteString(second[:20])
	require.NoError(t, err)
	_, err = f.WriteString(second[20:])
	require.NoError(t, err)
	out.await(t, "second")
	_, err = f.WriteString(`{"type":"assistant","toolUseResult":{"agentId":"late"},"message":{"role":"assistant","content":"reply"}}` + "\n")
	require.NoError(t, err)
	out.await(t, "reply")

	require.NoError(t, os.MkdirAll(filepath.Join(dir, hostileID, "subagents"), 0o755))
	f.WriteString(prompt("poke")) // the subagents' folder is watched once there: a change of the transcript reads it
	out.await(t, "poke")
	require.NoError(t, os.WriteFile(filepath.Join(dir, hostileID, "subagents", "agent-late.jsonl"), []byte(prompt("from the subagent")), 0o600))
	out.await(t, "from the subagent")
	require.NoError(t, stop())
	assert.Equal(t, 1, strings.Count(out.String(), "second"), "each entry once")
}

func TestLogJSON(t *testing.T) {
	sess := claudeSession(t)
	a, c, err := Pick(sess, all.Agents, "efa9")
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, Log(context.Background(), &b, sess, a, c, LogOptions{JSON: true}))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 6)
	var e Entry
	require.NoError(t, json.Unmarshal([]byte(lines[3]), &e))
	assert.Equal(t, Entry{Kind: Prompt, Time: e.Time, Cwd: "/tmp/wd", Text: "Reply with one word.", Subagent: "aa60665581de99ce5"}, e)
	assert.Contains(t, lines[1], `"kind":"tool_call"`)
}

func TestPick(t *testing.T) {
	sess := claudeSession(t)
	a, c, err := Pick(sess, all.Agents, "")
	require.NoError(t, err)
	assert.Equal(t, "claude", a.Name)
	assert.Equal(t, "a9591006-baa7-4a7a-bbe2-fc4551896ce7", c.ID, "the latest")
	_, _, err = Pick(sess, all.Agents, "nope")
	require.ErrorIs(t, err, ErrNoConversation)
	_, c, err = Pick(sess, all.Agents, "EFA92EF9")
	require.NoError(t, err)
	assert.Equal(t, "efa92ef9-e802-408b-8900-34b6a9691f2b", c.ID)
}

// TestLogFollowOpencode: log -f of an opencode conversation prints a reply once opencode marks it complete (the
// rows are read again from a private copy when the database changes).
func TestLogFollowOpencode(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	db := opencodetest.DB(t, root)
	opencodetest.AddSession(t, db, "ses_1111aaaa01", "", 1795600000000)
	opencodetest.AddMessage(t, db, "msg_01", "ses_1111aaaa01", "user", 1795600000100, `{"type":"text","text":"first prompt"}`)
	c := only(t, sess, opencode.Agent)
	out, stop := follow(t, sess, opencode.Agent, c)
	out.await(t, "first prompt")

	opencodetest.Exec(t, db, `INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES ('msg_02', 'ses_1111aaaa01', 1795600001000, 1795600001000, '{"role":"assistant","time":{"created":1795600001000}}')`)
	opencodetest.Exec(t, db, `INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES ('prt_02', 'msg_02', 'ses_1111aaaa01', 1795600001000, 1795600001000, '{"type":"text","text":"streaming reply"}')`)
	opencodetest.AddMessage(t, db, "msg_00", "ses_other", "user", 1795600001500, `{"type":"text","text":"another conversation"}`)
	opencodetest.Exec(t, db, `UPDATE message SET data = '{"role":"assistant","time":{"created":1795600001000,"completed":1795600002000}}' WHERE id = 'msg_02'`)
	opencodetest.AddMessage(t, db, "msg_03", "ses_1111aaaa01", "user", 1795600003000, `{"type":"text","text":"second prompt"}`)
	out.await(t, "second prompt")
	require.NoError(t, stop())
	assert.Equal(t, 1, strings.Count(out.String(), "streaming reply"), "the reply once, complete")
	assert.NotContains(t, out.String(), "another conversation")
	assert.Less(t, strings.Index(out.String(), "streaming reply"), strings.Index(out.String(), "second prompt"))
}

// TestLogFollowGemini: Gemini rewrites its chat ($set of the whole history): log -f prints each message once.
func TestLogFollowGemini(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	p := filepath.Join(root, ".gemini/tmp/w/chats/session-2026-11-26T01-00-9ab916a9.jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(`{"sessionId":"9ab916a9-2021-45fc-83cd-518e4cf981a0","startTime":"2026-11-26T01:00:00Z"}
{"id":"m1","timestamp":"2026-11-26T01:00:01Z","type":"user","content":[{"text":"hello"}]}
`), 0o600))
	c := only(t, sess, gemini.Agent)
	out, stop := follow(t, sess, gemini.Agent, c)
	out.await(t, "hello")
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteString(`{"$set":{"messages":[{"id":"m1","timestamp":"2026-11-26T01:00:01Z","type":"user","content":[{"text":"hello"}]}]}}
{"id":"m2","timestamp":"2026-11-26T01:00:02Z","type":"gemini","content":"hi there"}
`)
	require.NoError(t, err)
	out.await(t, "hi there")
	require.NoError(t, stop())
	assert.Equal(t, 1, strings.Count(out.String(), "hello\n"), out.String())
}
