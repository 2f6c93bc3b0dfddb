package codex_test

import (
	"path"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/agentstest"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/agents/codex"
	"github.com/sessionfs/sessionfs/agents/codex/codextest"
	"github.com/sessionfs/sessionfs/layout"
)

var day = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

// shapes is a session whose .codex holds a thread in each shape Codex 0.171.0 keeps one in, by thread: plain,
// reverted (two rollouts, the second resumed), archived, archived and compressed, compressed beside its plain
// self (Codex decompressing it to resume it), and compressed in its dated folder.
func shapes(t *testing.T) (*layout.Dir, string, map[string]string) {
	t.Helper()
	sess, root := agentstest.OpenSession(t)
	ids := map[string]string{}
	for i, shape := range []string{"plain", "reverted", "archived", "archived-zst", "both", "zst"} {
		ids[shape] = codextest.Thread(i + 1)
	}
	put := func(rel string, data []byte) { codextest.Write(t, root, filepath.Join(".codex", rel), data) }
	name := func(shape, rollout string) string { return codextest.Name(day, ids[shape], rollout) }
	put(codextest.Dated(day, name("plain", "")), codextest.Rollout(ids["plain"], "/ws", day, false, "plain hello"))
	put(codextest.Dated(day, name("reverted", "")), codextest.Rollout(ids["reverted"], "/ws", day, false, "first", "reverted away"))
	put(codextest.Dated(day, name("reverted", codextest.Thread(99))),
		codextest.Rollout(ids["reverted"], "/ws/sub", day.Add(time.Hour), true, "after the revert", "resumed"))
	put("archived_sessions/"+name("archived", ""), codextest.Rollout(ids["archived"], "/ws", day, false, "archived hello"))
	put("archived_sessions/"+name("archived-zst", "")+".zst",
		codextest.Compress(t, codextest.Rollout(ids["archived-zst"], "/ws", day, false, "cold and archived")))
	both := codextest.Rollout(ids["both"], "/ws", day, false, "decompressed", "and resumed")
	put(codextest.Dated(day, name("both", "")), both)
	put(codextest.Dated(day, name("both", ""))+".zst", codextest.Compress(t, both[:len(both)/2]))
	put(codextest.Dated(day, name("zst", ""))+".zst", codextest.Compress(t, codextest.Rollout(ids["zst"], "/ws", day, false, "cold hello")))
	return sess, root, ids
}

// Every shape is one conversation, read whole: a reverted thread's rollouts in order, an archived or compressed
// rollout as a plain one, a compressed copy beside its plain self not at all.
func TestConversationsInEveryShape(t *testing.T) {
	sess, _, ids := shapes(t)
	cs, err := codex.Agent.Conversations(sess)
	require.NoError(t, err)
	byID := map[string]agents.Conversation{}
	for _, c := range cs {
		require.NotContains(t, byID, c.ID, "one conversation a thread")
		byID[c.ID] = c
	}
	want := map[string]struct {
		prompt   string
		messages int
	}{
		"plain": {"plain hello", 2}, "reverted": {"first", 8}, "archived": {"archived hello", 2},
		"archived-zst": {"cold and archived", 2}, "both": {"decompressed", 4}, "zst": {"cold hello", 2},
	}
	require.Len(t, byID, len(want))
	for shape, w := range want {
		c := byID[ids[shape]]
		assert.Equal(t, w.prompt, c.FirstPrompt, shape)
		assert.Equal(t, w.messages, c.Messages, shape)
		assert.Zero(t, c.Malformed, shape)
	}
	r := byID[ids["reverted"]]
	require.Len(t, r.Parts, 1)
	assert.Equal(t, codextest.Name(day, ids["reverted"], ""), path.Base(r.Path), "the first rollout first")
	assert.Equal(t, codextest.Name(day, ids["reverted"], codextest.Thread(99)), path.Base(r.Parts[0]))
	assert.Equal(t, []string{"/ws", "/ws/sub"}, r.Cwds)
	assert.True(t, r.Last.After(day.Add(time.Hour)), "its last line is the second rollout's")
	assert.Equal(t, "archived_sessions", path.Base(path.Dir(byID[ids["archived"]].Path)))
	assert.Equal(t, ".zst", path.Ext(byID[ids["zst"]].Path))
	assert.Equal(t, ".jsonl", path.Ext(byID[ids["both"]].Path), "the plain file, not its compressed copy")

	assert.Equal(t, len(want), codex.Agent.CountConversations(sess))
	ix := all.Index(sess)
	assert.Equal(t, len(want), ix.ByAgent["codex"])
	assert.ElementsMatch(t, []string{ids["plain"], ids["reverted"], ids["archived"], ids["archived-zst"], ids["both"], ids["zst"]}, ix.IDs)
	assert.Contains(t, ix.Rels, ".codex/archived_sessions", "an archive changes the index")
}

// A thread is found by its id in whatever shape, and watch tells an archived rollout's conversation.
func TestHoldersAndFileOfEveryShape(t *testing.T) {
	store, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	_, err = store.Create("s1", layout.CreateOptions{})
	require.NoError(t, err)
	thread := codextest.Thread(7)
	archived := filepath.Join(".codex", "archived_sessions", codextest.Name(day, thread, codextest.Thread(8))+".zst")
	codextest.Write(t, store.Dir("s1"), archived, codextest.Compress(t, codextest.Rollout(thread, "/ws", day, true, "hi")))
	hs, err := all.Holders(store, thread)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Equal(t, "s1", hs[0].ID)
	assert.Equal(t, "codex", hs[0].Agent)

	for rel, ok := range map[string]bool{
		".codex/archived_sessions/" + codextest.Name(day, thread, ""):       true,
		".codex/sessions/2026/11/20/" + codextest.Name(day, thread, "x"):    false, // a rollout id is a uuid
		".codex/archived_sessions/2026/" + codextest.Name(day, thread, ""):  false, // archived_sessions is flat
		".codex/sessions/2026/11/20/" + codextest.Name(day, thread, "")[1:]: false,
	} {
		a, conv, got := all.FileOf(rel)
		assert.Equal(t, ok, got, rel)
		if ok {
			assert.Equal(t, codex.Agent, a)
			assert.Equal(t, thread[:8], conv)
		}
	}
}

// A hostile compressed rollout (a bomb: 256 KiB standing for 8 GiB of newlines) beside a good one is read to
// its bound, counted as malformed, and the good one read whole.
func TestABombIsBounded(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	thread := codextest.Thread(5)
	good := codextest.Compress(t, codextest.Rollout(thread, "/ws", day, false, "before the bomb"))
	dir := filepath.Join(".codex", codextest.Dated(day, ""))
	codextest.Write(t, root, filepath.Join(dir, codextest.Name(day, thread, ""))+".zst", append(good, codextest.Bomb(64<<10, '\n')...))
	codextest.Write(t, root, filepath.Join(dir, codextest.Name(day, thread, codextest.Thread(6))),
		codextest.Rollout(thread, "/ws", day.Add(time.Hour), true, "after it"))
	start := time.Now()
	cs, err := codex.Agent.Conversations(sess)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	assert.Less(t, time.Since(start), 5*time.Second, "not 8 GiB of it")
	assert.Equal(t, "before the bomb", cs[0].FirstPrompt)
	assert.Equal(t, 4, cs[0].Messages, "the rollout after it too")
	assert.Equal(t, 1, cs[0].Malformed)
}
