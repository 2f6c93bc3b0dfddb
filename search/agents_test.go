package search

import (
	"os"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
