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

	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/agents/claude"
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

// TestLogFollow: log -f prints the conversation, then each line the agent appends (a half-written line once it is
// whole), and a subagent's transcript made after it started; woken by inotify (the fallback poll is off).
func TestLogFollow(t *testing.T) {
	defer func(p time.Duration) { pollEvery = p }(pollEvery)
	pollEvery = time.Hour
	sess, c, dir := hostile(t, prompt("first"))
	ctx, cancel := context.WithCancel(context.Background())
	out := newAwaited()
	done := make(chan error, 1)
	go func() { done <- Log(ctx, out, sess, claude.Agent, c, LogOptions{Follow: true}) }()
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
	cancel()
	require.NoError(t, <-done)
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
