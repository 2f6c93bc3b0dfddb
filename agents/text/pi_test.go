package text

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents/agentstest"
	"github.com/sessionfs/sessionfs/agents/pi"
)

// piFile puts body in session sess (root) as a pi session file of the workspace's folder.
func piFile(t *testing.T, root, body string) {
	t.Helper()
	p := filepath.Join(root, ".pi/sessions/--session-workspace--/2026-12-02T14-00-00-000Z_019ae0c4-7b2a-7c3e-9f10-2b3c4d5e6f70.jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
}

// A pi 1.6.0 session in its format (agents/pi/testdata/session.jsonl): every branch in the order pi wrote it,
// thinking and the system prompt left out, tool calls and results on one line, the user's ! command, compaction
// and branch summaries and a failed reply as notes, the header's cwd on each entry.
func TestPiEntries(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	b, err := os.ReadFile("../pi/testdata/session.jsonl")
	require.NoError(t, err)
	piFile(t, root, string(b))
	es := entries(t, sess, pi.Agent, only(t, sess, pi.Agent))
	assert.Equal(t, []string{"cwd /session/workspace",
		"prompt::the aardvark in the workspace",
		"reply::Let me look.",
		"tool_call:bash:bash(ls -la)",
		"tool_result:bash:2 lines: a",
		"reply::stub reply",
		"tool_call:bash:bash(make)",
		"tool_result:bash:error: make: *** No targets. Stop.",
		"note::Compaction summary: We listed files.",
		"note::Branch summary: Tried listing.",
		"note::error: 429 rate limited",
		"prompt::the badger, as a string"}, said(es))
	for _, e := range es {
		assert.False(t, e.Time.IsZero(), e.Text)
		assert.Greater(t, e.Offset, int64(0), "after the header: %s", e.Text)
	}
	fs, err := Files(sess, pi.Agent, only(t, sess, pi.Agent))
	require.NoError(t, err)
	assert.Len(t, fs, 1)
}

// What a session wrote is bounded and made safe: a control character is shown, not sent; a content of a million
// blocks is read one block at a time; a line that is not JSON is left out.
func TestPiHostile(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	many := strings.Repeat(`{"type":"image","data":"","mimeType":"image/png"},`, 100000)
	piFile(t, root, `{"type":"session","version":3,"id":"x","timestamp":"2026-12-02T14:00:00.000Z","cwd":"/w\u001b[2J"}
{"type":"message","id":"a","parentId":null,"timestamp":"2026-12-02T14:00:01.000Z","message":{"role":"user","content":"hi\u001b]0;pwned\u0007","timestamp":1}}
not json
{"type":"message","id":"b","parentId":"a","timestamp":"2026-12-02T14:00:02.000Z","message":{"role":"assistant","content":[`+many+`{"type":"text","text":"done"}],"stopReason":"stop","timestamp":2}}
{"type":"message","id":"c","parentId":"b","timestamp":"2026-12-02T14:00:03.000Z","message":{"role":"toolResult","toolName":"read","content":[`+many+`{"type":"text","text":"x"}],"isError":false,"timestamp":3}}
`)
	es := entries(t, sess, pi.Agent, only(t, sess, pi.Agent))
	require.Len(t, es, 3)
	for _, e := range es {
		assert.NotContains(t, e.Text+e.Cwd, "\x1b")
		assert.NotContains(t, e.Text, "\x07")
		assert.LessOrEqual(t, len(e.Text), MaxText+64)
	}
	assert.Equal(t, "reply", es[1].Kind.String())
	assert.Equal(t, "done", es[1].Text)
	assert.Equal(t, "tool_result", es[2].Kind.String())
}

// What the real pi 1.6.0 wrote (agents/pi/testdata/real.jsonl): each prompt under the cwd pi went on in.
func TestPiEntriesOfARealSession(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	b, err := os.ReadFile("../pi/testdata/real.jsonl")
	require.NoError(t, err)
	piFile(t, root, string(b))
	ws := "/home/u/agent-sessions/sessions/s1/workspace"
	assert.Equal(t, []string{"cwd " + ws, "prompt::the aardvark in the workspace", "reply::stub reply",
		"cwd " + ws + "/sub", "prompt::the badger from a subfolder", "reply::stub reply",
		"cwd " + ws, "prompt::the capybara via sessionfs resume", "reply::stub reply",
		"cwd /tmp/elsewhere", "prompt::the dugong from outside", "reply::stub reply"},
		said(entries(t, sess, pi.Agent, only(t, sess, pi.Agent))))
}
