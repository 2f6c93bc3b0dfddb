package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCLIPapercuts (issue 50, 5): what a new user hit, each said plainly. Before: new "" (an empty id) said "check: invalid
// session id" (no session named); label ID K- printed the id and a trailing blank; logs --help gave --tail two
// defaults ("(default: all) (default -1)"); --format '{{.Bogus}}' named Go's type (main.lsRow); log, resume and
// search --session gave no "did you mean", and no command did for a transposed name (dmeo); resume of a session
// with no conversation started one without a word; ls --json said "agents": {} of a session with a Claude
// conversation.
func TestCLIPapercuts(t *testing.T) {
	store := t.TempDir()
	r := cli(t, store, "new", "")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, `session "": invalid session id`)
	assert.NotContains(t, r.stderr, "check:")

	ok(t, store, "new", "demo")
	ok(t, store, "label", "demo", "a=1")
	assert.Equal(t, "demo\n", ok(t, store, "label", "demo", "a-"), "no labels left: the id alone")

	help := ok(t, store, "logs", "--help")
	assert.Contains(t, help, `(default "all")`)
	assert.NotContains(t, help, "(default -1)")
	r = cli(t, store, "logs", "demo", "--tail", "x")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, `--tail takes a number of lines, 0 or more, or all (not "x")`)

	r = cli(t, store, "resume", "demo", "--claude", "true")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "session demo has no Claude conversation yet: claude starts a new one", "resume says it begins anew")

	// ls --json counts Claude's conversations by agent too, as the page does.
	conv := filepath.Join(store, "sessions", "demo", ".claude", "projects", "-session-workspace", "1a2b3c4d-0000-4000-8000-000000000001.jsonl")
	require.NoError(t, os.WriteFile(conv, []byte(`{"type":"user","message":{"role":"user","content":"hi"},"timestamp":"2026-11-26T02:00:00Z"}`+"\n"), 0o600))
	var rows []struct {
		ID     string         `json:"id"`
		Agents map[string]int `json:"agents"`
	}
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "ls", "--json")), &rows))
	require.Len(t, rows, 1)
	assert.Equal(t, map[string]int{"claude": 1}, rows[0].Agents, "was {} when only Claude's")

	// One suggester for every command that takes a session's name, a transposed one included.
	for _, args := range [][]string{{"show", "dmeo"}, {"log", "dmeo"}, {"resume", "dmeo"}, {"search", "x", "--session", "dmeo"}} {
		r = cli(t, store, args...)
		assert.Equal(t, 125, r.code, "%v", args)
		assert.Contains(t, r.stderr, "did you mean demo?", "%v", args)
	}

	r = cli(t, store, "ls", "--format", "{{.Bogus}}")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "--format: no field Bogus")
	assert.NotContains(t, r.stderr, "main.")
}
