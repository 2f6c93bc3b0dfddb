package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
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
	assert.Equal(t, []string{"push", "pull"}, complete("sync", ""))
	assert.Equal(t, []string{"demo"}, complete("sync", "push", ""))
	assert.Empty(t, complete("trash", "restore", "demo", ""), "nothing in the trash: no session ids offered")
	assert.Equal(t, []string{"demo"}, complete("rm", "x", ""), "rm takes many ids")
}
