package all

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/layout"
)

// Index counts as CountConversations does, names each conversation's id, and the folders a new one changes.
func TestIndexCountsAsCountConversations(t *testing.T) {
	s, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Create("s", layout.CreateOptions{})
	require.NoError(t, err)
	root := s.Dir("s")
	write := func(rel string) {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("{}\n"), 0o600))
	}
	const a, b = "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01", "019a2c1e-7f3d-7c41-9b2e-3f1d0c8e5a7b"
	write(".claude/projects/-session-workspace/" + a + ".jsonl")
	write(".claude/projects/-home-u-proj/" + a + ".jsonl") // one conversation in two folders
	write(".claude/projects/-home-u-proj/notes.txt")
	write(".codex/sessions/2026/01/02/rollout-2026-01-02T03-04-05-" + b + ".jsonl")
	write(".gemini/tmp/abc/chats/session-2026-01-02T03-04-5f1d0c8e.jsonl")

	sess, err := s.OpenSession("s")
	require.NoError(t, err)
	defer sess.Close()
	got := Index(sess)
	assert.Equal(t, CountConversations(sess), got.ByAgent)
	assert.Equal(t, map[string]int{"claude": 1, "codex": 1, "gemini": 1}, got.ByAgent)
	assert.ElementsMatch(t, []string{a, b, "5f1d0c8e"}, got.IDs)
	assert.False(t, got.AnyID)
	for _, rel := range []string{".claude/projects", ".claude/projects/-session-workspace", ".claude/projects/-home-u-proj",
		".codex/sessions", ".codex/sessions/2026/01/02", ".gemini/tmp/abc/chats"} {
		assert.Contains(t, got.Rels, rel)
	}
}
