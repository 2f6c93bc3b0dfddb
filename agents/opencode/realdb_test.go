package opencode

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// realDB makes a database at p with opencode 1.18.33's whole schema: testdata/schema.sql is the sqlite_master of
// a database its CLI made (run offline against e2e/openaistub), with the rows of its migration table, so
// opencode would find its migrations done.
func realDB(t *testing.T, p string) *sql.DB {
	t.Helper()
	ddl, err := os.ReadFile(filepath.Join("testdata", "schema.sql"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	db, err := sql.Open("sqlite", "file:"+p+"?_pragma=journal_mode(wal)")
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	_, err = db.Exec(string(ddl))
	require.NoError(t, err)
	return db
}

// mustExec runs statements on db, each with its arguments.
func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	_, err := db.Exec(q, args...)
	require.NoError(t, err, q)
}

// addProject adds opencode's project id (a repository's, or "global") with its worktree.
func addProject(t *testing.T, db *sql.DB, id, worktree string) {
	t.Helper()
	mustExec(t, db, `INSERT OR IGNORE INTO project (id, worktree, time_created, time_updated, sandboxes) VALUES (?, ?, 1, 1, '[]')`, id, worktree)
}

// addSession adds an opencode session (a conversation, or a subagent's under parent) begun in dir at ms.
func addSession(t *testing.T, db *sql.DB, id, parent, project, dir string, ms int64) {
	t.Helper()
	var p any
	if parent != "" {
		p = parent
	}
	mustExec(t, db, `INSERT INTO session (id, project_id, parent_id, slug, directory, path, title, version, time_created, time_updated)
		VALUES (?, ?, ?, 'slug', ?, ?, 'title', '1.18.33', ?, ?)`, id, project, p, dir, dir[1:], ms, ms)
	mustExec(t, db, `INSERT OR IGNORE INTO event_sequence (aggregate_id, seq) VALUES (?, 0)`, id)
	mustExec(t, db, `INSERT INTO event (id, aggregate_id, seq, type, data) VALUES (?, ?, 0, 'session.created.1', '{}')`, "evt_"+id, id)
}

// addMessage adds a message of session with one text part (a prompt, or a reply completed unless open) at ms.
func addMessage(t *testing.T, db *sql.DB, id, session, role, text string, ms int64, open bool) {
	t.Helper()
	data := fmt.Sprintf(`{"role":%q,"time":{"created":%d}}`, role, ms)
	if role == "assistant" && !open {
		data = fmt.Sprintf(`{"role":"assistant","time":{"created":%d,"completed":%d}}`, ms, ms+1)
	}
	mustExec(t, db, `INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)`, id, session, ms, ms+1, data)
	mustExec(t, db, `INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?)`,
		"prt_"+id, id, session, ms, ms+1, fmt.Sprintf(`{"type":"text","text":%q}`, text))
}

// count is the number of rows of table (in db) where cond holds.
func count(t *testing.T, db *sql.DB, table, cond string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM `+table+` WHERE `+cond, args...).Scan(&n))
	return n
}
