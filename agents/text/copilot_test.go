package text

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents/agentstest"
	"github.com/sessionfs/sessionfs/agents/copilot"
)

// copilotFile puts body in session sess (root) as the events.jsonl of a Copilot CLI session.
func copilotFile(t *testing.T, root, body string) {
	t.Helper()
	p := filepath.Join(root, ".copilot/session-state/36e50d69-d228-4e9a-8561-0d1053620d65/events.jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
}

func copilotTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../copilot/testdata", name))
	require.NoError(t, err)
	return string(b)
}

// What the real Copilot CLI 1.0.102 wrote (agents/copilot/testdata/real.jsonl): each prompt under the cwd of its run,
// the --resume from B under A (Copilot went back to the session's first cwd); the system prompt it sends with every
// turn left out.
func TestCopilotEntriesOfARealSession(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	copilotFile(t, root, copilotTestdata(t, "real.jsonl"))
	es := entries(t, sess, copilot.Agent, only(t, sess, copilot.Agent))
	a := "/tmp/research/copilot/A"
	assert.Equal(t, []string{"cwd " + a, "prompt::hello from A", "reply::stub reply",
		"cwd " + a + "/sub", "prompt::second from A/sub", "reply::stub reply",
		"cwd /tmp/research/copilot/B", "prompt::third from B", "reply::stub reply",
		"cwd " + a, "prompt::fourth resume by id from B", "reply::stub reply"}, said(es))
	for _, e := range es {
		assert.False(t, e.Time.IsZero(), e.Text)
		assert.Greater(t, e.Offset, int64(0), "after session.start: %s", e.Text)
	}
}

// A reply that calls a tool (agents/copilot/testdata/tool.jsonl): the call as it ran, its result, then the reply.
func TestCopilotToolEntries(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	copilotFile(t, root, copilotTestdata(t, "tool.jsonl"))
	assert.Equal(t, []string{"cwd /tmp/research/copilot/C", "prompt::RUNENV please",
		"tool_call:bash:bash(dump env, env | sort > /tmp/research/copilot/childenv.txt; echo done)",
		"tool_result:bash:2 lines: done",
		"reply::py stub reply"}, said(entries(t, sess, copilot.Agent, only(t, sess, copilot.Agent))))
}

// What a session wrote is bounded and made safe: a control character is shown, not sent; a reply of 1 MB is cut;
// a line that is not JSON, a content that is no string, a failed tool and a result of an unknown call are read
// without harm; a million calls never finished are not all remembered.
func TestCopilotHostile(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	big := strings.Repeat("x", 1<<20)
	var starts strings.Builder
	for i := range 5000 {
		starts.WriteString(`{"type":"tool.execution_start","data":{"toolCallId":"c` + strings.Repeat("9", i%7) + string(rune('a'+i%26)) +
			`","toolName":"bash","arguments":{"command":"ls"}},"timestamp":"2026-12-03T07:00:04Z"}` + "\n")
	}
	copilotFile(t, root, `{"type":"session.start","data":{"context":{"cwd":"/w\u001b[2J"}},"timestamp":"2026-12-03T07:00:00Z"}
{"type":"user.message","data":{"content":"hi\u001b]0;pwned\u0007"},"timestamp":"2026-12-03T07:00:01Z"}
not json
{"type":"user.message","data":{"content":["a","list"]},"timestamp":"2026-12-03T07:00:01Z"}
{"type":"assistant.message","data":{"content":"`+big+`"},"timestamp":"2026-12-03T07:00:02Z"}
{"type":"tool.execution_complete","data":{"toolCallId":"nope","success":false,"error":{"message":"denied"}},"timestamp":"2026-12-03T07:00:03Z"}
`+starts.String())
	es := entries(t, sess, copilot.Agent, only(t, sess, copilot.Agent))
	require.Len(t, es, 3+5000)
	for _, e := range es {
		assert.NotContains(t, e.Text+e.Cwd, "\x1b")
		assert.NotContains(t, e.Text, "\x07")
		assert.LessOrEqual(t, len(e.Text), MaxText+64)
	}
	assert.Equal(t, "prompt", es[0].Kind.String())
	assert.Equal(t, "reply", es[1].Kind.String())
	assert.Equal(t, "tool_result", es[2].Kind.String())
	assert.Equal(t, "error: denied", es[2].Text)
	assert.Equal(t, "tool_call", es[3].Kind.String())
}
