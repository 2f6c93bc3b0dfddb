package agents_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/layout"
)

// testdata/session holds files the real CLIs wrote in offline runs: a Qwen Code 0.24.4 chat, a Gemini CLI
// 0.61.0 chat and the second file Gemini makes for the same id on resume, and a Codex 0.169.0 rollout (its long
// developer instructions cut short).
func TestSessionConversations(t *testing.T) {
	sess, err := layout.OpenDir("testdata/session")
	require.NoError(t, err)
	defer sess.Close()
	cs, err := all.SessionConversations(sess)
	require.NoError(t, err)
	byAgent := map[string]agents.Conversation{}
	for _, c := range cs {
		assert.NotContains(t, byAgent, c.Agent, "one conversation each, the resumed Gemini chat once")
		byAgent[c.Agent] = c
	}
	require.Len(t, byAgent, 3)

	q := byAgent["qwen"]
	assert.Equal(t, "6ff0322b-05c7-4854-be6e-8e9ae644122e", q.ID)
	assert.Equal(t, "hello there", q.FirstPrompt)
	assert.Equal(t, 2, q.Messages)
	assert.Equal(t, []string{"/tmp/qx/ws"}, q.Cwds)

	g := byAgent["gemini"]
	assert.Equal(t, "9ab916a9-2021-45fc-83cd-518e4cf981a0", g.ID, "the whole id, from the chat's first line")
	assert.Equal(t, "hello there", g.FirstPrompt, "the session context Gemini sends first is not the prompt")
	assert.Equal(t, 4, g.Messages, "two turns, the resumed one too")

	c := byAgent["codex"]
	assert.Equal(t, "01a20739-265b-7793-acee-f94fce8f06e3", c.ID)
	assert.Equal(t, "hello there", c.FirstPrompt, "Codex's <environment_context> is not the prompt")
	assert.Equal(t, 4, c.Messages)
	assert.Equal(t, []string{"/tmp/cx/ws", "/tmp/cx/other"}, c.Cwds)
	assert.False(t, c.Last.IsZero())

	assert.Equal(t, map[string]int{"codex": 1, "gemini": 1, "qwen": 1}, all.CountConversations(sess))
}

// A conversation is found by its id in any agent's files, the session whose file was born first owning it; a
// link or a FIFO planted as a conversation file is never read.
func TestHolders(t *testing.T) {
	store, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	for _, id := range []string{"first", "aaa-copy", "hostile"} {
		_, err := store.Create(id, layout.CreateOptions{})
		require.NoError(t, err)
	}
	const qwenID = "6ff0322b-05c7-4854-be6e-8e9ae644122e"
	const geminiID = "9ab916a9-2021-45fc-83cd-518e4cf981a0"
	src := "testdata/session"
	copyTree(t, src, store.Dir("first"))
	time.Sleep(20 * time.Millisecond)
	copyTree(t, src, store.Dir("aaa-copy"))
	chats := filepath.Join(store.Dir("hostile"), ".qwen", "projects", "x", "chats")
	require.NoError(t, os.MkdirAll(chats, 0o755))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(chats, qwenID+".jsonl")))
	gchats := filepath.Join(store.Dir("hostile"), ".gemini", "tmp", "x", "chats")
	require.NoError(t, os.MkdirAll(gchats, 0o755))
	require.NoError(t, syscallMkfifo(filepath.Join(gchats, "session-2026-01-01T00-00-9ab916a9.jsonl")))

	for id, agent := range map[string]string{qwenID: "qwen", geminiID: "gemini", "01a20739-265b-7793-acee-f94fce8f06e3": "codex"} {
		done := make(chan []agents.Holder)
		go func() {
			h, err := all.Holders(store, id)
			assert.NoError(t, err)
			done <- h
		}()
		var h []agents.Holder
		select {
		case h = <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Holders blocked on a FIFO")
		}
		require.Len(t, h, 2, id)
		assert.Equal(t, "first", h[0].ID, "the first-born file owns %s", id)
		assert.Equal(t, "aaa-copy", h[1].ID)
		assert.Equal(t, agent, h[0].Agent)
	}
	h, err := all.Holders(store, "9ab916a9-0000-0000-0000-000000000000")
	require.NoError(t, err)
	assert.Empty(t, h, "Gemini's file names hold only 8 characters of the id: the rest is checked")
	h, err = all.Holders(store, "../x")
	require.NoError(t, err)
	assert.Empty(t, h)
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	}))
}
