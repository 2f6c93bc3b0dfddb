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
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/layout"
)

// claudeSession is a session whose canonical transcript folder holds the real transcripts of agents/claude's
// testdata (the claude CLI 2.1.197 against the e2e stub API: a plain conversation resumed once, one that spawned
// a subagent).
func claudeSession(t *testing.T) *layout.Dir {
	t.Helper()
	sess, root := agentstest.OpenSession(t)
	copyTree(t, "../claude/testdata/projects/-tmp-wd", filepath.Join(root, ".claude/projects", layout.CanonicalProject))
	return sess
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	require.NoError(t, os.CopyFS(to, os.DirFS(from)))
}

// conversation is the conversation id of agent a in sess, as the listings give it.
func conversation(t *testing.T, sess *layout.Dir, a *agents.Agent, id string) agents.Conversation {
	t.Helper()
	cs, err := a.Conversations(sess)
	require.NoError(t, err)
	for _, c := range cs {
		if c.ID == id {
			return c
		}
	}
	require.Failf(t, "no such conversation", "%s among %v", id, cs)
	return agents.Conversation{}
}

func entries(t *testing.T, sess *layout.Dir, a *agents.Agent, c agents.Conversation) []Entry {
	t.Helper()
	var out []Entry
	require.NoError(t, Entries(sess, a, c, func(e Entry) error { out = append(out, e); return nil }))
	return out
}

func TestClaudeEntriesOfARealTranscript(t *testing.T) {
	sess := claudeSession(t)
	es := entries(t, sess, claude.Agent, conversation(t, sess, claude.Agent, "a9591006-baa7-4a7a-bbe2-fc4551896ce7"))
	var got []string
	for _, e := range es {
		got = append(got, e.Kind.String()+":"+e.Text)
		assert.Equal(t, "/tmp/wd", e.Cwd)
		assert.False(t, e.Time.IsZero())
		assert.Empty(t, e.Subagent)
	}
	assert.Equal(t, []string{"prompt:hello there", "reply:stub reply", "prompt:again", "reply:stub reply"}, got)
	assert.Less(t, es[0].Offset, es[1].Offset)
}

func TestClaudeSubagentIsNestedAfterItsCall(t *testing.T) {
	sess := claudeSession(t)
	es := entries(t, sess, claude.Agent, conversation(t, sess, claude.Agent, "efa92ef9-e802-408b-8900-34b6a9691f2b"))
	var got []string
	for _, e := range es {
		got = append(got, e.Subagent+"|"+e.Kind.String()+":"+e.Tool+":"+e.Text)
	}
	assert.Equal(t, []string{
		"|prompt::please DELEGATE-TO-SUBAGENT now",
		"|tool_call:Agent:Agent(say hello, Reply with one word., general-purpose)",
		"|tool_result:Agent:5 lines: stub reply",
		"aa60665581de99ce5|prompt::Reply with one word.",
		"aa60665581de99ce5|reply::stub reply",
		"|reply::stub reply",
	}, got)
}

func TestRenderClaude(t *testing.T) {
	sess := claudeSession(t)
	c := conversation(t, sess, claude.Agent, "efa92ef9-e802-408b-8900-34b6a9691f2b")
	var b strings.Builder
	require.NoError(t, Render(&b, sess, claude.Agent, c))
	out := b.String()
	t.Log("\n" + out)
	assert.Contains(t, out, "# claude conversation efa92ef9-e802-408b-8900-34b6a9691f2b")
	assert.Contains(t, out, "- Cwd: /tmp/wd")
	assert.Contains(t, out, "please DELEGATE-TO-SUBAGENT now")
	assert.Contains(t, out, "- → Agent(say hello")
	assert.Contains(t, out, "> ### Subagent aa60665581de99ce5")
	assert.Contains(t, out, "> Reply with one word.")
}

// Claude 2.1.3xx tells the model in a user line that a background subagent finished: a note, not a prompt.
func TestClaudeTaskNotificationIsANote(t *testing.T) {
	sess, c, _ := hostile(t, prompt("<task-notification>\n<task-id>a1</task-id>\n<summary>Agent \"x\" finished</summary>\n<result>done\nwell</result>\n</task-notification>"))
	es := entries(t, sess, claude.Agent, c)
	require.Len(t, es, 1)
	assert.Equal(t, Note, es[0].Kind)
	assert.Equal(t, `Agent "x" finished: done well`, es[0].Text)
}

// Transcripts of Claude CLIs before the subagents/ folder kept a subagent's lines in the transcript itself, marked
// isSidechain (with their agentId from 1.x on): they are the subagent's entries.
func TestClaudeOldInlineSidechain(t *testing.T) {
	sess, c, _ := hostile(t, prompt("main prompt")+
		`{"type":"user","isSidechain":true,"agentId":"a1b2","message":{"role":"user","content":"task for the subagent"}}`+"\n"+
		`{"type":"assistant","isSidechain":true,"message":{"role":"assistant","content":[{"type":"text","text":"sidechain reply"}]}}`+"\n"+
		`{"type":"summary","summary":"Fixing the build","leafUuid":"x"}`+"\n"+
		`{"type":"system","subtype":"compact_boundary","content":"Conversation compacted"}`+"\n"+
		`{"type":"user","isCompactSummary":true,"message":{"role":"user","content":"This session is being continued: we fixed it"}}`+"\n")
	var got []string
	for _, e := range entries(t, sess, claude.Agent, c) {
		got = append(got, e.Subagent+"|"+e.Kind.String()+":"+e.Text)
	}
	assert.Equal(t, []string{"|prompt:main prompt", "a1b2|prompt:task for the subagent", "sidechain|reply:sidechain reply",
		"|note:Summary: Fixing the build", "|note:Conversation compacted",
		"|note:Compaction summary: This session is being continued: we fixed it"}, got)
}
