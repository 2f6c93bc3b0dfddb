package text

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents/agentstest"
	"github.com/sessionfs/sessionfs/agents/kimi"
)

// kimiFile puts body in session sess (root) as the main wire of a Kimi Code conversation.
func kimiFile(t *testing.T, root, body string) {
	t.Helper()
	p := filepath.Join(root, ".kimi-code/sessions/wd_a_95ff0dd53803/session_018507bd-ba8a-4c29-a52c-a2d9dc4f7253/agents/main/wire.jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
}

// A conversation Kimi Code 2.1.0 wrote (agents/kimi/testdata/wire.jsonl): the prompt, the tool call and its
// result named after it, the reply; Kimi's own lines (the system prompt, the context it sends, reminders it adds,
// the model's stream) left out; the cwd profile.bind declares on each entry.
func TestKimiEntries(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	b, err := os.ReadFile("../kimi/testdata/wire.jsonl")
	require.NoError(t, err)
	kimiFile(t, root, string(b))
	es := entries(t, sess, kimi.Agent, only(t, sess, kimi.Agent))
	assert.Equal(t, []string{"cwd /tmp/research/kimi/A",
		"prompt::RUNENV please",
		`tool_call:Bash:Bash(dump env, env | sort > /tmp/research/kimi/childenv.txt; echo done)`,
		"tool_result:Bash:done",
		"reply::stub reply"}, said(es))
	for _, e := range es {
		assert.False(t, e.Time.IsZero(), e.Text)
	}
}

// What a session wrote is made safe and bounded: a control character is shown, not sent; a line that is not JSON
// is left out.
func TestKimiHostile(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	kimiFile(t, root, `{"type":"profile.bind","environmentDisclosure":{"cwd":"/w\u001b[2J"},"time":1}
not json
{"type":"turn.prompt","input":[{"type":"text","text":"hi\u001b]0;pwned\u0007"}],"origin":{"kind":"user"},"time":2}
{"type":"agent.message.appended","message":{"message":{"role":"assistant","content":"a string","toolCalls":[{"id":"c","name":"x\u001b[31m","arguments":"not json"}]}},"time":3}
`)
	es := entries(t, sess, kimi.Agent, only(t, sess, kimi.Agent))
	for _, s := range said(es) {
		assert.NotContains(t, s, "\x1b", s)
		assert.NotContains(t, s, "\a", s)
	}
	assert.Len(t, es, 2, "the prompt and the call: %q", said(es))
}
