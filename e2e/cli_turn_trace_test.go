package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunWithNoTraceFails (issue 50, 1): a run that asks the agent for a turn (claude -p) and exits 0 while the
// session recorded nothing is an error, exit 125, naming where the turn should be and what may have kept it
// away. Here -e points Claude's config elsewhere: the real CLI answers, exits 0, and writes its transcript
// outside the session. Before, exec exited 0 and said nothing: the turn was lost in silence. A turn recorded, and
// a run that asks for none (--version), pass as before.
func TestRunWithNoTraceFails(t *testing.T) {
	claude := claudeBin(t)
	store, api := claudeSetup(t)
	env := claudeEnv(t, api.URL)
	recorded := func() []string { // every cwd's folder: an old CLI files by the cwd, not -session-workspace
		m, err := filepath.Glob(filepath.Join(store, "sessions", "s1", ".claude", "projects", "*", "*.jsonl"))
		require.NoError(t, err)
		return m
	}

	r := cliIn(t, store, "", env, "exec", "s1", "--", claude, "-p", "recorded")
	require.Equal(t, 0, r.code, "a turn the session records: %s", r.stderr)
	require.Len(t, recorded(), 1)

	r = cliIn(t, store, "", env, "exec", "s1", "--", claude, "--version")
	assert.Equal(t, 0, r.code, "a run that asks for no turn is not judged: %s", r.stderr)

	elsewhere := t.TempDir()
	r = cliIn(t, store, "", env, "exec", "-e", "CLAUDE_CONFIG_DIR="+elsewhere, "s1", "--", claude, "-p", "lost")
	t.Logf("exec with the config elsewhere: exit %d, %s", r.code, r.stderr)
	assert.Equal(t, 125, r.code, "the agent exited 0 and the session recorded nothing")
	assert.Contains(t, r.stderr, "claude exited 0, but session s1 recorded nothing in .claude/projects")
	assert.Contains(t, r.stderr, "the turn is lost")
	found, _ := filepath.Glob(filepath.Join(elsewhere, "projects", "*", "*.jsonl"))
	assert.Len(t, found, 1, "the transcript went where -e pointed")
	assert.Len(t, recorded(), 1, "the session got nothing")
	_, err := os.Stat(elsewhere)
	require.NoError(t, err)
}
