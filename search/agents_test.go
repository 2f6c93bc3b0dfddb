package search

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents/opencode"
)

// Every agent's conversations are indexed: the real Codex, Gemini and Qwen files of agents/testdata, and an
// opencode database (its conversations are rows: one that changes is reindexed whole, one gone is dropped).
func TestEveryAgentIsIndexed(t *testing.T) {
	s := newStore(t, "demo")
	root := s.Dir("demo")
	require.NoError(t, os.CopyFS(root, os.DirFS("../agents/testdata/session")))
	db := opencodeDB(t, root)
	addOpencodeSession(t, db, "ses_1111aaaa01", 1795600000000)
	addOpencodeMessage(t, db, "msg_01", "ses_1111aaaa01", "user", 1795600000100, `{"type":"text","text":"hello there from opencode"}`)
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
	addOpencodeMessage(t, db, "msg_02", "ses_1111aaaa01", "assistant", 1795600001000, `{"type":"text","text":"a pangolin"}`)
	require.NoError(t, ix.CatchUp(nil))
	hits := search(t, ix, Query{Match: "pangolin"})
	require.Len(t, hits, 1)
	assert.Equal(t, "ses_1111aaaa01", hits[0].Conversation)
	before := inserted.Load()
	require.NoError(t, ix.CatchUp(nil))
	assert.Zero(t, inserted.Load()-before)
	exec(t, db, `DELETE FROM message`)
	exec(t, db, `DELETE FROM session`)
	require.NoError(t, ix.CatchUp(nil))
	assert.Empty(t, search(t, ix, Query{Match: "pangolin"}))
	assert.Equal(t, []string{"codex/prompt", "gemini/prompt", "qwen/prompt"}, agentsOf(`"hello there"`))
}

// opencodeDB makes the session's opencode database with opencode 1.18.33's whole schema (agents/opencode's
// testdata: the sqlite_master of a database its real CLI made), as agents/text's tests do.
func opencodeDB(t *testing.T, root string) *sql.DB {
	t.Helper()
	ddl, err := os.ReadFile("../agents/opencode/testdata/schema.sql")
	require.NoError(t, err)
	p := filepath.Join(root, ".opencode", opencode.DB)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	db, err := sql.Open("sqlite", "file:"+p+"?_pragma=journal_mode(wal)")
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	_, err = db.Exec(string(ddl))
	require.NoError(t, err)
	exec(t, db, `INSERT INTO project (id, worktree, time_created, time_updated, sandboxes) VALUES ('global', '/', 1, 1, '[]')`)
	return db
}

func exec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	_, err := db.Exec(q, args...)
	require.NoError(t, err, q)
}

func addOpencodeSession(t *testing.T, db *sql.DB, id string, ms int64) {
	exec(t, db, `INSERT INTO session (id, project_id, parent_id, slug, directory, path, title, version, time_created, time_updated)
		VALUES (?, 'global', NULL, 'slug', '/w', 'w', 'title', '1.18.33', ?, ?)`, id, ms, ms)
}

func addOpencodeMessage(t *testing.T, db *sql.DB, id, session, role string, ms int64, parts ...string) {
	data := fmt.Sprintf(`{"role":%q,"time":{"created":%d,"completed":%d},"path":{"cwd":"/w","root":"/w"}}`, role, ms, ms+1)
	exec(t, db, `INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)`, id, session, ms, ms+1, data)
	for i, p := range parts {
		exec(t, db, `INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?)`,
			fmt.Sprintf("prt_%s_%d", id, i), id, session, ms, ms+1, p)
	}
	exec(t, db, `UPDATE session SET time_updated = ? WHERE id = ?`, ms+2, session)
}
