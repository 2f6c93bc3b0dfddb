package text

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/agentstest"
	"github.com/sessionfs/sessionfs/agents/codex"
	"github.com/sessionfs/sessionfs/agents/gemini"
	"github.com/sessionfs/sessionfs/agents/opencode"
	"github.com/sessionfs/sessionfs/agents/opencode/opencodetest"
	"github.com/sessionfs/sessionfs/agents/qwen"
	"github.com/sessionfs/sessionfs/layout"
)

// realSession is a session holding agents/testdata/session: a conversation of the real Codex 0.169.0, Gemini
// 0.61.0 and Qwen 0.24.4 CLIs each (offline, against the e2e stubs), resumed once from another cwd.
func realSession(t *testing.T) *layout.Dir {
	t.Helper()
	sess, root := agentstest.OpenSession(t)
	copyTree(t, "../testdata/session", root)
	return sess
}

// said is each entry as kind:tool:text, the cwd where it changes.
func said(es []Entry) []string {
	var out []string
	cwd := ""
	for _, e := range es {
		if e.Cwd != cwd {
			out = append(out, "cwd "+e.Cwd)
			cwd = e.Cwd
		}
		out = append(out, e.Kind.String()+":"+e.Tool+":"+e.Text)
	}
	return out
}

func only(t *testing.T, sess *layout.Dir, a *agents.Agent) agents.Conversation {
	t.Helper()
	cs, err := a.Conversations(sess)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	return cs[0]
}

func TestCodexEntriesOfARealRollout(t *testing.T) {
	sess := realSession(t)
	es := entries(t, sess, codex.Agent, only(t, sess, codex.Agent))
	assert.Equal(t, []string{"cwd /tmp/cx/ws", "prompt::hello there", "reply::stub reply",
		"cwd /tmp/cx/other", "prompt::again", "reply::stub reply"}, said(es))
}

func TestGeminiEntriesOfARealChat(t *testing.T) {
	sess := realSession(t)
	es := entries(t, sess, gemini.Agent, only(t, sess, gemini.Agent))
	assert.Equal(t, []string{"prompt::hello there", "reply::stub reply", "prompt::again", "reply::stub reply"}, said(es))
}

func TestQwenEntriesOfARealChat(t *testing.T) {
	sess := realSession(t)
	es := entries(t, sess, qwen.Agent, only(t, sess, qwen.Agent))
	assert.Equal(t, []string{"cwd /tmp/qx/ws", "prompt::hello there", "reply::stub reply"}, said(es))
}

func TestToolCallsOfEachAgent(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	write := func(rel, body string) {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	}
	write(".codex/sessions/2026/11/26/rollout-2026-11-26T01-00-00-01a20739-265b-7793-acee-f94fce8f06e3.jsonl",
		`{"timestamp":"2026-11-26T01:00:00Z","type":"session_meta","payload":{"id":"01a20739-265b-7793-acee-f94fce8f06e3","cwd":"/w"}}
{"timestamp":"2026-11-26T01:00:01Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\",\"-la\"],\"timeout\":5}","call_id":"c1"}}
{"timestamp":"2026-11-26T01:00:02Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"{\"output\":\"a\\nb\\n\",\"metadata\":{\"exit_code\":0}}"}}
{"timestamp":"2026-11-26T01:00:03Z","type":"compacted","payload":{"message":"we listed files"}}
`)
	write(".qwen/projects/-w/chats/6ff0322b-05c7-4854-be6e-8e9ae644122e.jsonl",
		`{"type":"assistant","timestamp":"2026-11-26T01:00:00Z","cwd":"/w","message":{"role":"model","parts":[{"text":"thinking","thought":true},{"functionCall":{"name":"read_file","args":{"absolute_path":"/w/go.mod"}}}]}}
{"type":"tool_result","timestamp":"2026-11-26T01:00:01Z","cwd":"/w","message":{"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":"module x\n"}}}]}}
{"type":"system","subtype":"chat_compression","timestamp":"2026-11-26T01:00:02Z","cwd":"/w"}
`)
	write(".gemini/tmp/w/chats/session-2026-11-26T01-00-9ab916a9.jsonl",
		`{"sessionId":"9ab916a9-2021-45fc-83cd-518e4cf981a0","startTime":"2026-11-26T01:00:00Z"}
{"id":"m1","timestamp":"2026-11-26T01:00:01Z","type":"gemini","content":"","toolCalls":[{"name":"run_shell_command","args":{"command":"make"},"status":"error","resultDisplay":"make: *** no rule"}]}
{"id":"m2","timestamp":"2026-11-26T01:00:02Z","type":"error","content":"quota exceeded"}
`)
	assert.Equal(t, []string{"cwd /w", "tool_call:shell:shell(ls -la)", "tool_result:shell:2 lines: a",
		"note::Compaction summary: we listed files"}, said(entries(t, sess, codex.Agent, only(t, sess, codex.Agent))))
	assert.Equal(t, []string{"cwd /w", "tool_call:read_file:read_file(/w/go.mod)", "tool_result:read_file:module x",
		"note::Conversation compacted"}, said(entries(t, sess, qwen.Agent, only(t, sess, qwen.Agent))))
	assert.Equal(t, []string{"tool_call:run_shell_command:run_shell_command(make)",
		"tool_result:run_shell_command:error: make: *** no rule", "note::error: quota exceeded"},
		said(entries(t, sess, gemini.Agent, only(t, sess, gemini.Agent))))
}

func TestOpencodeEntriesWithASubagent(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	db := opencodetest.DB(t, root)
	opencodetest.AddSession(t, db, "ses_1111aaaa01", "", 1795600000000)
	opencodetest.AddSession(t, db, "ses_2222bbbb01", "ses_1111aaaa01", 1795600002000)
	opencodetest.AddMessage(t, db, "msg_01", "ses_1111aaaa01", "user", 1795600000100, `{"type":"text","text":"fix the build"}`)
	opencodetest.AddMessage(t, db, "msg_02", "ses_1111aaaa01", "assistant", 1795600001000,
		`{"type":"reasoning","text":"hmm"}`, `{"type":"text","text":"looking"}`,
		`{"type":"tool","tool":"bash","state":{"status":"completed","input":{"command":"go build"},"output":"ok\n"}}`)
	opencodetest.AddMessage(t, db, "msg_03", "ses_2222bbbb01", "user", 1795600002100, `{"type":"text","text":"look around"}`)
	opencodetest.AddMessage(t, db, "msg_04", "ses_1111aaaa01", "assistant", 1795600003000, `{"type":"text","text":"done \u001b]52;c;aGk=\u0007"}`)
	c := only(t, sess, opencode.Agent)
	es := entries(t, sess, opencode.Agent, c)
	var got []string
	for _, e := range es {
		got = append(got, e.Subagent+"|"+e.Kind.String()+":"+e.Text)
	}
	assert.Equal(t, []string{"|prompt:fix the build", "|reply:looking", "|tool_call:bash(go build)",
		"|tool_result:ok", "ses_2222bbbb01|prompt:look around", `|reply:done \x1b]52;c;aGk=\x07`}, got)
	var b strings.Builder
	require.NoError(t, Render(&b, sess, opencode.Agent, c))
	assert.Contains(t, b.String(), "# opencode conversation ses_1111aaaa01")
	assert.NotContains(t, b.String(), "\x1b")
}
