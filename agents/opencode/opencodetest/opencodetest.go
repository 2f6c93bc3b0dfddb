// Package opencodetest makes opencode databases for tests: the schema of a database opencode 1.18.33 made
// (agents/opencode/testdata/schema.sql, the sqlite_master of a real one), and its sessions, messages and parts.
package opencodetest

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents/opencode"
)

// DB makes the opencode database of the session whose folder is root, with the whole schema and the global
// project, closed when the test ends.
func DB(t testing.TB, root string) *sql.DB {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	ddl, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "testdata", "schema.sql"))
	require.NoError(t, err)
	p := filepath.Join(root, ".opencode", opencode.DB)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	db, err := sql.Open("sqlite", "file:"+p+"?_pragma=journal_mode(wal)")
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	Exec(t, db, string(ddl))
	Exec(t, db, `INSERT INTO project (id, worktree, time_created, time_updated, sandboxes) VALUES ('global', '/', 1, 1, '[]')`)
	return db
}

// Exec runs statement q, failing the test on an error.
func Exec(t testing.TB, db *sql.DB, q string, args ...any) {
	t.Helper()
	_, err := db.Exec(q, args...)
	require.NoError(t, err, q)
}

// AddSession adds conversation id, made at ms (Unix milliseconds), a subagent's of parent when parent is not "".
func AddSession(t testing.TB, db *sql.DB, id, parent string, ms int64) {
	t.Helper()
	var p any
	if parent != "" {
		p = parent
	}
	Exec(t, db, `INSERT INTO session (id, project_id, parent_id, slug, directory, path, title, version, time_created, time_updated)
		VALUES (?, 'global', ?, 'slug', '/w', 'w', 'title', '1.18.33', ?, ?)`, id, p, ms, ms)
}

// AddMessage adds message id of role (user, assistant) to conversation session at ms, with parts (each a part's
// JSON data).
func AddMessage(t testing.TB, db *sql.DB, id, session, role string, ms int64, parts ...string) {
	t.Helper()
	data := fmt.Sprintf(`{"role":%q,"time":{"created":%d,"completed":%d},"path":{"cwd":"/w","root":"/w"}}`, role, ms, ms+1)
	Exec(t, db, `INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)`, id, session, ms, ms+1, data)
	for i, part := range parts {
		Exec(t, db, `INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?)`,
			fmt.Sprintf("prt_%s_%d", id, i), id, session, ms, ms+1, part)
	}
}
