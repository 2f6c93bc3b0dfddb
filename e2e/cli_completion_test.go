package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCompletionAndHelp: shell completion scripts, session ids completed, examples in help.
func TestCompletionAndHelp(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "alpha")
	ok(t, store, "new", "beta")
	for _, shell := range []string{"bash", "zsh", "fish"} {
		assert.Contains(t, ok(t, store, "completion", shell), "sessionfs", shell)
	}
	out := ok(t, store, "__complete", "show", "al")
	assert.Contains(t, out, "alpha")
	assert.NotContains(t, out, "beta")
	assert.Contains(t, ok(t, store, "exec", "--help"), "Examples:")
}

// Completion offers what fits where the cursor is: no session ids for the command after --, backends for
// --backend, push/pull then ids for sync, trashed uuids for trash restore.
func TestCompletionInContext(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "demo")
	complete := func(args ...string) []string {
		out := ok(t, store, append([]string{"__complete"}, args...)...)
		var words []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if !strings.HasPrefix(l, ":") {
				words = append(words, l)
			}
		}
		return words
	}
	assert.NotContains(t, complete("exec", "demo", "--", ""), "demo")
	assert.Equal(t, []string{"local", "docker", "modal"}, complete("run", "--backend", ""))
	assert.Equal(t, []string{"push", "pull", "demo"}, complete("sync", ""), "sync ID goes both ways")
	assert.Equal(t, []string{"demo"}, complete("sync", "push", ""))
	assert.Empty(t, complete("trash", "restore", "demo", ""), "nothing in the trash: no session ids offered")
	assert.Equal(t, []string{"demo"}, complete("rm", "x", ""), "rm takes many ids")
}

// TestCompletionOffersWhatFits (issue 40, defect 3): trash restore offers removed sessions, not live ones; find and
// resume offer conversation ids (resume session ids too), never file names.
func TestCompletionOffersWhatFits(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "demo")
	ok(t, store, "new", "gone")
	ok(t, store, "rm", "gone")
	const uuid = "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01"
	canon := filepath.Join(store, "sessions", "demo", ".claude", "projects", "-session-workspace")
	require.NoError(t, os.MkdirAll(canon, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(canon, uuid+".jsonl"),
		[]byte(`{"type":"user","message":{"role":"user","content":"hi"}}`+"\n"), 0o600))
	complete := func(args ...string) (words []string, directive string) {
		out := ok(t, store, append([]string{"__complete"}, args...)...)
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if strings.HasPrefix(l, ":") {
				directive = l
			} else if l != "" {
				words = append(words, l)
			}
		}
		return words, directive
	}
	words, _ := complete("trash", "restore", "")
	assert.Equal(t, []string{"gone"}, words, "only what can be restored")
	words, directive := complete("find", "2fe")
	assert.Equal(t, []string{uuid}, words)
	assert.Equal(t, ":4", directive, "no file names")
	words, directive = complete("find", "zzz")
	assert.Empty(t, words)
	assert.Equal(t, ":4", directive, "no file names")
	words, _ = complete("resume", "2fe")
	assert.Equal(t, []string{uuid}, words)
	words, _ = complete("resume", "")
	assert.Equal(t, []string{"demo", uuid}, words)
	// log ID <TAB>: that session's conversations, with their agent (issue 50: it offered file names).
	words, directive = complete("log", "demo", "")
	assert.Equal(t, []string{uuid + "\tclaude"}, words)
	assert.Equal(t, ":36", directive, "no file names, newest first")
}
