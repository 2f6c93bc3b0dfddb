package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLsFindSeeAnotherHostsChanges (issue 38, item 5): ls and find read the store's index, and a second host
// sharing the store (a plain process writing it as an older sessionfs would: no index update) adds, removes,
// renames and edits sessions and makes a conversation; the next ls and find show all of it at once.
func TestLsFindSeeAnotherHostsChanges(t *testing.T) {
	store := t.TempDir()
	for _, id := range []string{"a", "b", "c"} {
		ok(t, store, "new", id, "--label", "team=web")
	}
	assert.Equal(t, "a\nb\nc\n", ok(t, store, "ls", "-q", "--filter", "label=team=web"))
	index := filepath.Join(store, "index", "sessions")
	require.FileExists(t, index, "ls made the index")

	const uuid = "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01"
	other := exec.Command("sh", "-euc", `
		cd "$1/sessions"
		mkdir -p d/workspace d/.claude/projects/-session-workspace
		printf '{"id":"d","created":"2026-01-02T03:04:05Z","labels":{"team":"cli"}}\n' > d/session.json
		rm -rf b
		mv c c2
		sed -i 's/"web"/"ops"/' a/session.json
		printf '{"type":"user"}\n' > "a/.claude/projects/-session-workspace/$2.jsonl"
	`, "host2", store, uuid)
	out, err := other.CombinedOutput()
	require.NoError(t, err, "%s", out)

	assert.Equal(t, "a\nc2\nd\n", ok(t, store, "ls", "-q"))
	assert.Equal(t, "c2\n", ok(t, store, "ls", "-q", "--filter", "label=team=web"), "a's label was changed")
	assert.Equal(t, "d\n", ok(t, store, "ls", "-q", "--filter", "label=team=cli"), "d was made behind the index")
	assert.Equal(t, "a 1\nc2 0\nd 0\n", ok(t, store, "ls", "--format", "{{.ID}} {{.Conversations}}"))
	assert.Equal(t, "a\n", ok(t, store, "find", uuid))
	var found map[string]any
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "find", uuid[:8], "--json")), &found))
	assert.Equal(t, uuid, found["conversation"], "a prefix finds it too")
	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "ls", "--json")), &rows))
	require.Len(t, rows, 3)
	assert.Equal(t, "2026-01-02T03:04:05Z", rows[2]["created"])

	b, err := os.ReadFile(index)
	require.NoError(t, err)
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n")[1:] {
		id, _, _ := strings.Cut(line, "\t")
		ids = append(ids, id)
	}
	assert.Equal(t, []string{"a", "c2", "d"}, ids, "the index was fixed up for what changed")

	// A corrupt index is rebuilt, never trusted.
	require.NoError(t, os.WriteFile(index, []byte("sessionfs-index 1\nghost\t-\tc\t.\t\t{}\n\x00garbage"), 0o644))
	assert.Equal(t, "c2\na\nd\n", ok(t, store, "ls", "-q", "--sort", "created"), "newest first; d says it was made in January")
	assert.NotContains(t, ok(t, store, "ls"), "ghost")
}

// TestLsSizeIsCached: SIZE is measured when a session changes, not on every ls; --size measures it now, and ls's
// help says so.
func TestLsSizeIsCached(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "a")
	size := func(args ...string) string {
		return strings.TrimSpace(ok(t, store, append([]string{"ls", "--format", "{{.Size}}"}, args...)...))
	}
	before := size()
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "a", "workspace", "big"), make([]byte, 1<<20), 0o644))
	assert.Equal(t, before, size(), "a write in the workspace is not measured by every ls")
	after := size("--size")
	assert.NotEqual(t, before, after, "--size measures it")
	assert.Equal(t, after, size(), "and the index keeps what it measured")
	help := ok(t, store, "ls", "--help")
	assert.Contains(t, help, "SIZE is")
	assert.Contains(t, help, "--size")
}
