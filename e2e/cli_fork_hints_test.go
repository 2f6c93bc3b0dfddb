package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestForkHintsNameTheSession (issue 50, 4): after a turn in a fork, the printed resume command carries the
// conversation on in the fork, not in the session it was forked from; "resume ID UUID" resumes the named
// session's copy, and "resume UUID" says which copy it took and how to take the other.
func TestForkHintsNameTheSession(t *testing.T) {
	claude := claudeBin(t)
	store, api := claudeSetup(t)
	mount(t, store)
	env := claudeEnv(t, api.URL)
	canonical := func(id string) string {
		return filepath.Join(store, "sessions", id, ".claude", "projects", "-session-workspace")
	}
	r := cliIn(t, store, "", env, "exec", "s1", "--", claude, "-p", "hello")
	require.Equal(t, 0, r.code, r.stderr)
	files := transcripts(t, canonical("s1"))
	require.Len(t, files, 1)
	uuid := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
	assert.Contains(t, r.stderr, "sessionfs resume "+uuid+"\n", "a conversation in one session: its uuid alone")

	ok(t, store, "fork", "s1", "s1-fork")
	r = cliIn(t, store, "", env, "exec", "s1-fork", "--", claude, "-p", "--continue", "in the fork")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "sessionfs resume s1-fork "+uuid+"\n", "the hint names the fork")

	origin, fork := lineCount(t, files[0]), lineCount(t, filepath.Join(canonical("s1-fork"), uuid+".jsonl"))
	r = cliIn(t, store, t.TempDir(), env, "resume", "s1-fork", uuid, "--claude", claude, "--", "-p", "the hint, pasted")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, origin, lineCount(t, files[0]), "the origin is left alone")
	assert.Greater(t, lineCount(t, filepath.Join(canonical("s1-fork"), uuid+".jsonl")), fork, "the fork carried on")
	assert.Contains(t, r.stderr, "sessionfs resume s1-fork "+uuid+"\n")

	r = cliIn(t, store, t.TempDir(), env, "resume", uuid[:8], "--claude", claude, "--", "-p", "which one?")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "using s1,")
	assert.Contains(t, r.stderr, "sessionfs resume s1-fork "+uuid+" carries on another's")

	r = cliIn(t, store, t.TempDir(), env, "resume", "s1-fork", "no-such-conversation", "--claude", claude)
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Contains(t, r.stderr, "session s1-fork holds no conversation no-such-conversation")
}

// TestImportedRunsAreMarked (issue 50, 4): the runs an archive brings are marked as such by ps -a, runs, the
// page's data and logs, which says where their output stayed instead of blaming the terminal.
func TestImportedRunsAreMarked(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	r := cli(t, store, "exec", "s1", "--", "sh", "-c", "echo kept here")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, ok(t, store, "logs", "s1/1"), "kept here")
	archive := filepath.Join(t.TempDir(), "s1.tar.zst")
	ok(t, store, "export", "s1", "-o", archive)

	other := t.TempDir()
	ok(t, other, "import", "--archive", archive, "--as", "s2")
	ps := ok(t, other, "ps", "-a")
	assert.Contains(t, ps, "exited 0 (imported)", ps)
	runs := ok(t, other, "runs", "s2")
	assert.Contains(t, runs, "0 (imported)", runs)
	var listed []struct {
		Imported bool `json:"imported"`
	}
	require.NoError(t, json.Unmarshal([]byte(ok(t, other, "runs", "s2", "--json")), &listed))
	require.Len(t, listed, 1)
	assert.True(t, listed[0].Imported)
	host, err := os.Hostname()
	require.NoError(t, err)
	r = cli(t, other, "logs", "s2/1")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "it came in an archive (sessionfs import)")
	assert.Contains(t, r.stderr, "on "+host)
	assert.NotContains(t, r.stderr, "terminal")

	// A run of the imported session's own is not marked.
	r = cli(t, other, "exec", "s2", "--", "true")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, ok(t, other, "runs", "s2"), "s2/2")
	assert.NotContains(t, strings.Split(ok(t, other, "ps", "-a"), "\n")[1], "(imported)", "the newest run is this store's own")
}
