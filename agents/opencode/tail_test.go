package opencode

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents/agentstest"
)

// stamp is the time Render prints first.
var stamp = regexp.MustCompile(`^(\S+) (?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d (.*)$`) // a date for a message not of today

// untimed strips the time of each line: "<short id> <who and text>".
func untimed(t *testing.T, lines []string) []string {
	t.Helper()
	out := []string{}
	for _, l := range lines {
		m := stamp.FindStringSubmatch(l)
		require.NotNil(t, m, l)
		out = append(out, m[1]+" "+m[2])
	}
	return out
}

// TestTail: watch begins at the end of the database; each message appended then shows once, in order, when
// complete: a prompt once its text is in, a reply once opencode marks it completed (not while it streams); a
// subagent's under its conversation's short id, marked with its own; tool calls as calls.
func TestTail(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	db := realDB(t, filepath.Join(root, dbRel))
	addProject(t, db, "global", "/")
	addSession(t, db, "ses_1111aaaa01", "", "global", "/w", 1795600000000)
	addMessage(t, db, "msg_01", "ses_1111aaaa01", "user", "before watch", 1795600000100, false)

	next := startTail(false, false)
	got, err := next(sess)
	require.NoError(t, err)
	assert.Empty(t, got, "it begins at the end")

	addMessage(t, db, "msg_02", "ses_1111aaaa01", "user", "fix   the\nbuild", 1795600001000, false)
	addMessage(t, db, "msg_03", "ses_1111aaaa01", "assistant", "working", 1795600002000, true)
	got, err = next(sess)
	require.NoError(t, err)
	assert.Equal(t, []string{"1111aaaa [opencode] user fix the build"}, untimed(t, got), "the reply still streams")

	mustExec(t, db, `INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES
		('prt_msg_03b', 'msg_03', 'ses_1111aaaa01', 1795600002500, 1795600002500,
		'{"type":"tool","tool":"bash","state":{"status":"completed","input":{"command":"go build"}}}')`)
	got, err = next(sess)
	require.NoError(t, err)
	assert.Empty(t, got)
	mustExec(t, db, `UPDATE message SET time_updated = 1795600003000,
		data = '{"role":"assistant","time":{"created":1795600002000,"completed":1795600003000}}' WHERE id = 'msg_03'`)
	addSession(t, db, "ses_2222bbbb01", "ses_1111aaaa01", "global", "/w", 1795600003100)
	addMessage(t, db, "msg_04", "ses_2222bbbb01", "user", "look around", 1795600003200, false)
	got, err = next(sess)
	require.NoError(t, err)
	assert.Equal(t, []string{
		`1111aaaa [opencode] assistant working → bash({"command":"go build"})`,
		"1111aaaa [opencode] [agent-2222bbbb] user look around",
	}, untimed(t, got))

	got, err = next(sess)
	require.NoError(t, err)
	assert.Empty(t, got, "each message once")

	all := startTail(true, false)
	got, err = all(sess)
	require.NoError(t, err)
	assert.Len(t, got, 4, "--from-start: every message so far")
	assert.Contains(t, got[0], "before watch")
}

// TestTailJSON: --json gives each message as opencode's API does, its data and parts with their ids.
func TestTailJSON(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	next := startTail(false, true)
	got, err := next(sess)
	require.NoError(t, err)
	assert.Empty(t, got, "no database yet")

	db := realDB(t, filepath.Join(root, dbRel))
	addProject(t, db, "global", "/")
	addSession(t, db, "ses_1111aaaa01", "", "global", "/w", 1795600000000)
	addMessage(t, db, "msg_01", "ses_1111aaaa01", "user", "hello", 1795600000100, false)
	got, err = next(sess)
	require.NoError(t, err)
	require.Len(t, got, 1, "a database made after watch began is new")
	var m struct {
		Info struct {
			ID, SessionID, Role string
		}
		Parts []struct{ ID, MessageID, Type, Text string }
	}
	require.NoError(t, json.Unmarshal([]byte(got[0]), &m))
	assert.Equal(t, "msg_01", m.Info.ID)
	assert.Equal(t, "ses_1111aaaa01", m.Info.SessionID)
	assert.Equal(t, "user", m.Info.Role)
	require.Len(t, m.Parts, 1)
	assert.Equal(t, "prt_msg_01", m.Parts[0].ID)
	assert.Equal(t, "hello", m.Parts[0].Text)
}

func TestShort(t *testing.T) {
	assert.Equal(t, "ded6b2d6", Short("ses_ded6b2d63ffeDfX52jks6UEQD8"))
	assert.Equal(t, "abc", Short("ses_abc"))
}
