package nodes

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/layout"
)

// TestRemovalAcrossSecondsIsOneBatch: rm -rf of a conversation through the mount is one unlink per file, and the
// clock may turn a second between them; it is still one removal, restored whole.
func TestRemovalAcrossSecondsIsOneBatch(t *testing.T) {
	store, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	_, err = store.Create("s", layout.CreateOptions{})
	require.NoError(t, err)
	tree, err := NewTree(store)
	require.NoError(t, err)
	t.Cleanup(func() { tree.Close() })
	clock := time.Date(2026, 1, 2, 3, 4, 5, 900_000_000, time.UTC)
	tree.removals.now = func() time.Time { return clock }

	dir := filepath.Join(store.Dir("s"), layout.ProjectsDir, layout.CanonicalProject)
	write := func(rel, data string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, rel), []byte(data), 0o600))
	}
	remove := func(rel string) { require.Zero(t, tree.trashTranscript("s", canonical("s")+"/"+rel), rel) }
	write("u1.jsonl", "one")
	write("u1/subagents/a.jsonl", "agent")
	write("u2.jsonl", "other")
	remove("u1.jsonl")
	clock = clock.Add(300 * time.Millisecond) // the next second
	remove("u2.jsonl")
	remove("u1/subagents/a.jsonl")

	list, err := store.TrashedTranscripts("s")
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, "u2", list[0].UUID, "another conversation is a removal of its own")
	assert.Equal(t, "20260102T030406Z", list[0].Batch)
	assert.Equal(t, layout.TrashedTranscript{UUID: "u1", Removed: clock.Truncate(time.Second).Add(-time.Second),
		Size: 8, Batch: "20260102T030405Z", Files: 2}, list[1])
	restored, err := store.RestoreTranscript("s", "u1")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"u1.jsonl", "u1/subagents/a.jsonl"}, restored)

	// Removed again while the last removal is fresh, it joins that batch (emptied by the restore); once the gap
	// has passed, a new batch.
	remove("u1.jsonl")
	clock = clock.Add(removalGap + time.Second)
	remove("u1/subagents/a.jsonl")
	list, err = store.TrashedTranscripts("s")
	require.NoError(t, err)
	require.Len(t, list, 3)
	assert.Equal(t, "20260102T030409Z", list[0].Batch)
	assert.Equal(t, "u2", list[1].UUID)
	assert.Equal(t, layout.TrashedTranscript{UUID: "u1", Removed: list[2].Removed, Size: 3, Batch: "20260102T030405Z",
		Files: 1}, list[2])

	// A name already in the removal's batch (made and removed again at once) goes to a batch of its own second.
	write("u1.jsonl", "three")
	remove("u1.jsonl")
	write("u1.jsonl", "four")
	remove("u1.jsonl")
	list, err = store.TrashedTranscripts("s")
	require.NoError(t, err)
	require.Len(t, list, 4)
	assert.Equal(t, "20260102T030409Z-1", list[0].Batch, "nothing replaced")
	restored, err = store.RestoreTranscript("s", "u1")
	require.NoError(t, err)
	b, _ := os.ReadFile(filepath.Join(dir, "u1.jsonl"))
	assert.Equal(t, "four", string(b), "the newest copy comes back first")
}
