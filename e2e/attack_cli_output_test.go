package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	for _, args := range [][]string{{"runs", "s1"}, {"ps", "-a"}, {"show", "s1"}, {"ls"}} {
		out := ok(t, store, args...)
		t.Logf("%s:\n%s", strings.Join(args, " "), out)
		require.NotContains(t, out, "\x1b", "sessionfs %s sent an escape sequence to the terminal", strings.Join(args, " "))
		require.NotContains(t, out, "\x07", "sessionfs %s sent a BEL", strings.Join(args, " "))
		require.NotContains(t, out, "\u009b", "sessionfs %s sent a C1 CSI", strings.Join(args, " "))
	}
}
