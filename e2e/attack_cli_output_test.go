package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// TestAttackTerminalEscapesInListings: a session's processes write escape sequences into its session.json (a
// run's command, image and error, labels, aliases, the first prompt of a conversation); a person listing the store (runs, ps -a,
// show) sees them as text, never as control characters sent to their terminal (a retitled window, a clipboard
// written with OSC 52).
func TestAttackTerminalEscapesInListings(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	meta := filepath.Join(store, "sessions", "s1", "session.json")
	b, err := os.ReadFile(meta)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	osc := "\x1b]52;c;cHduZWQ=\x07\x1b]0;pwned\x07\x9b31m"
	m["runs"] = []map[string]any{{"n": 1, "backend": "docker" + osc, "image": "img" + osc, "command": []string{"claude", osc},
		"start": "2026-11-25T10:00:00Z", "end": "2026-11-25T10:01:00Z", "exit_code": 0, "error": "boom" + osc}}
	m["labels"] = map[string]string{"team": "web" + osc}
	m["forked_from"] = "x" + osc
	m["aliases"] = []string{"-tmp" + osc}
	b, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(meta, b, 0o644))
	canon := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
	require.NoError(t, os.WriteFile(filepath.Join(canon, "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01.jsonl"),
		[]byte(`{"type":"user","timestamp":"2026-11-25T10:00:00Z","message":{"role":"user","content":"hi `+strings.ReplaceAll(strings.ReplaceAll(osc, "\x1b", `\u001b`), "\x07", `\u0007`)+`"}}`+"\n"), 0o600))
	for _, args := range [][]string{{"runs", "s1"}, {"ps", "-a"}, {"show", "s1"}, {"ls"}, {"watch", "s1", "--no-follow"}, {"watch", "s1", "--no-follow", "--json"}} {
		out := ok(t, store, args...)
		t.Logf("%s:\n%s", strings.Join(args, " "), out)
		require.NotContains(t, out, "\x1b", "sessionfs %s sent an escape sequence to the terminal", strings.Join(args, " "))
		require.NotContains(t, out, "\x07", "sessionfs %s sent a BEL", strings.Join(args, " "))
		require.NotContains(t, out, "\u009b", "sessionfs %s sent a C1 CSI", strings.Join(args, " "))
	}
}

// TestAttackTerminalEscapesInLog: a session's processes write its transcript and its subagents' files: escape
// sequences in every field log shows (prompt, reply, tool name and arguments, result, cwd, subagent id), invalid
// UTF-8, a line of 40 MB, a subagent file that is a link to a host secret and one that is a FIFO. sessionfs log
// prints text only (no control character reaches the terminal), bounded, reads nothing outside the session and
// never blocks; --json as well.
func TestAttackTerminalEscapesInLog(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	const uuid = "2fe2d21b-be8f-4b12-b46b-12e68f6e9f02"
	canon := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
	esc := `\u001b]52;c;cHduZWQ=\u0007\u001b]0;pwned\u0007\u009b31m\u001b[2J\u0000\u202e`
	lines := []string{
		`{"type":"user","cwd":"/w` + esc + `","timestamp":"2026-11-25T10:00:00Z","message":{"role":"user","content":"hi ` + esc + "\xff\xfe" + `"}}`,
		`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"reply ` + esc + `"},{"type":"tool_use","id":"t1","name":"Bash` + esc + `","input":{"command":"ls ` + esc + `"}}]}}`,
		`{"type":"user","toolUseResult":{"agentId":"link"},"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"out ` + esc + `"}]}}`,
		`{"type":"user","isSidechain":true,"agentId":"side` + esc + `","message":{"role":"user","content":"inline ` + esc + `"}}`,
		`{"type":"user","message":{"role":"user","content":"` + strings.Repeat("A", 40<<20) + `"}}`,
		`{"type":"user","toolUseResult":{"agentId":"fifo"},"message":{"role":"user","content":"last words"}}`,
	}
	require.NoError(t, os.WriteFile(filepath.Join(canon, uuid+".jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	subs := filepath.Join(canon, uuid, "subagents")
	require.NoError(t, os.MkdirAll(subs, 0o755))
	secret := t.TempDir() // the host's: a transcript that would show if read
	require.NoError(t, os.WriteFile(filepath.Join(secret, "agent.jsonl"),
		[]byte(`{"type":"user","message":{"role":"user","content":"`+hostMarker+`"}}`+"\n"), 0o600))
	require.NoError(t, os.Symlink(filepath.Join(secret, "agent.jsonl"), filepath.Join(subs, "agent-link.jsonl")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(subs, "agent-fifo.jsonl"), 0o600))

	for _, args := range [][]string{{"log", "s1"}, {"log", uuid, "--json"}} {
		out := ok(t, store, args...)
		t.Logf("%s:\n%s", strings.Join(args, " "), out)
		require.Contains(t, out, "last words", "read to the end, no FIFO opened")
		require.Contains(t, out, "left out", "the 40 MB line is a note")
		require.Less(t, len(out), 64<<10, "bounded")
		require.NotContains(t, out, hostMarker, "the link to the host was not followed")
		require.NotContains(t, out, "\x1b", "sessionfs %s sent an escape sequence to the terminal", strings.Join(args, " "))
		require.NotContains(t, out, "\x07", "sessionfs %s sent a BEL", strings.Join(args, " "))
		require.NotContains(t, out, "\u009b", "sessionfs %s sent a C1 CSI", strings.Join(args, " "))
		require.NotContains(t, out, "\x00", "sessionfs %s sent a NUL", strings.Join(args, " "))
		require.NotContains(t, out, "\u202e", "sessionfs %s sent a bidi override", strings.Join(args, " "))
		require.True(t, utf8.ValidString(out), "invalid UTF-8 reached the terminal")
	}
}
