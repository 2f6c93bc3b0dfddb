package search

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents/codex/codextest"
	"github.com/sessionfs/sessionfs/agents/opencode/opencodetest"
)

// Every agent's conversations are indexed: the real Codex, Gemini and Qwen files of agents/testdata, and an
// opencode database (its conversations are rows: one that changes is reindexed whole, one gone is dropped).
func TestEveryAgentIsIndexed(t *testing.T) {
	s := newStore(t, "demo")
	root := s.Dir("demo")
	require.NoError(t, os.CopyFS(root, os.DirFS("../agents/testdata/session")))
	db := opencodetest.DB(t, root)
	opencodetest.AddSession(t, db, "ses_1111aaaa01", "", 1795600000000)
	opencodetest.AddMessage(t, db, "msg_01", "ses_1111aaaa01", "user", 1795600000100, `{"type":"text","text":"hello there from opencode"}`)
	ix, _ := openIndex(t, s)
	require.NoError(t, ix.CatchUp(nil))

	agentsOf := func(q string) []string {
		var out []string
		for _, h := range search(t, ix, Query{Match: q, Limit: 100}) {
			out = append(out, h.Agent+"/"+h.Kind)
		}
		sort.Strings(out)
		return out
	}
	assert.Equal(t, []string{"codex/prompt", "gemini/prompt", "opencode/prompt", "qwen/prompt"}, agentsOf(`"hello there"`))

	// opencode: a message added is found, a conversation removed is dropped; an unchanged database is not read.
	opencodetest.AddMessage(t, db, "msg_02", "ses_1111aaaa01", "assistant", 1795600001000, `{"type":"text","text":"a pangolin"}`)
	require.NoError(t, ix.CatchUp(nil))
	hits := search(t, ix, Query{Match: "pangolin"})
	require.Len(t, hits, 1)
	assert.Equal(t, "ses_1111aaaa01", hits[0].Conversation)
	before := inserted.Load()
	require.NoError(t, ix.CatchUp(nil))
	assert.Zero(t, inserted.Load()-before)
	opencodetest.Exec(t, db, `DELETE FROM message`)
	opencodetest.Exec(t, db, `DELETE FROM session`)
	require.NoError(t, ix.CatchUp(nil))
	assert.Empty(t, search(t, ix, Query{Match: "pangolin"}))
	assert.Equal(t, []string{"codex/prompt", "gemini/prompt", "qwen/prompt"}, agentsOf(`"hello there"`))
}

// Codex's threads in every shape 0.171.0 keeps them in are indexed: a reverted thread as one conversation (its
// rollouts' words all found, an append to its last rollout found after the next catch-up), an archived one,
// compressed ones; a bomb of a compressed rollout is read to its bound.
func TestCodexShapesAreIndexed(t *testing.T) {
	s := newStore(t, "demo")
	root := filepath.Join(s.Dir("demo"), ".codex")
	day := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	reverted, archived, cold, bomb := codextest.Thread(1), codextest.Thread(2), codextest.Thread(3), codextest.Thread(4)
	codextest.Write(t, root, codextest.Dated(day, codextest.Name(day, reverted, "")), codextest.Rollout(reverted, "/ws", day, false, "an aardvark"))
	later := codextest.Write(t, root, codextest.Dated(day, codextest.Name(day, reverted, codextest.Thread(9))),
		codextest.Rollout(reverted, "/ws", day.Add(time.Hour), true, "a badger"))
	codextest.Write(t, root, "archived_sessions/"+codextest.Name(day, archived, ""), codextest.Rollout(archived, "/ws", day, false, "a capybara"))
	codextest.Write(t, root, "archived_sessions/"+codextest.Name(day, cold, "")+".zst",
		codextest.Compress(t, codextest.Rollout(cold, "/ws", day, false, "a dugong")))
	codextest.Write(t, root, codextest.Dated(day, codextest.Name(day, bomb, ""))+".zst",
		append(codextest.Compress(t, codextest.Rollout(bomb, "/ws", day, false, "an echidna")), codextest.Bomb(64<<10, 'x')...))
	ix, _ := openIndex(t, s)
	require.NoError(t, ix.CatchUp(nil))

	conv := func(q string) []string {
		var out []string
		for _, h := range search(t, ix, Query{Match: q, Limit: 100}) {
			out = append(out, h.Agent+"/"+h.Conversation)
		}
		return out
	}
	for q, id := range map[string]string{"aardvark": reverted, "badger": reverted, "capybara": archived, "dugong": cold, "echidna": bomb} {
		assert.Equal(t, []string{"codex/" + id}, conv(q), q)
	}
	f, err := os.OpenFile(later, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write(codextest.Rollout(reverted, "/ws", day.Add(2*time.Hour), true, "a fennec"))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, ix.CatchUp(nil))
	assert.Equal(t, []string{"codex/" + reverted}, conv("fennec"))
	assert.Equal(t, []string{"codex/" + reverted}, conv("aardvark"), "indexed once")
}
