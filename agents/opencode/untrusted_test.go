package opencode

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/agentstest"
	"github.com/sessionfs/sessionfs/layout"
)

// hostile turns the database at p (of db_test's schema) into one a session's process could write: SQL run with
// the plain driver, writable_schema allowed, as sqlite3 would run it.
func hostile(t *testing.T, p string, statements ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+p)
	require.NoError(t, err)
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range statements {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
}

// plant adds a row to sqlite_master as a session's process can (writable_schema): an object SQLite loads by its
// SQL alone, named as it likes.
func plant(typ, name, table, text string) []string {
	return []string{`PRAGMA writable_schema = ON`,
		`INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql) VALUES ('` + typ + `', '` + name + `', '` + table + `', 0, '` +
			strings.ReplaceAll(text, `'`, `''`) + `')`,
		`PRAGMA writable_schema = OFF`}
}

// hostileSchemas are changes to db_test's schema that a database must be refused for: each runs (or hides) the
// session's SQL, or is not the shape read.
var hostileSchemas = map[string][]string{
	"a view that never ends": {`DROP TABLE session`, `CREATE VIEW session AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r)
		SELECT 'ses_' || n AS id, NULL AS parent_id, '/' AS directory, n AS time_created, n AS time_updated, '' AS path, 'global' AS project_id FROM r`},
	"a trigger":                 {`CREATE TABLE marker (x)`, `CREATE TRIGGER t AFTER UPDATE ON session BEGIN INSERT INTO marker VALUES ('fired'); END`},
	"a trigger named sqlite_":   append([]string{`CREATE TABLE marker (x)`}, plant("trigger", "sqlite_t", "session", `CREATE TRIGGER sqlite_t AFTER UPDATE ON session BEGIN INSERT INTO marker VALUES ('fired'); END`)...),
	"a trigger typed as table":  append([]string{`CREATE TABLE marker (x)`}, plant("table", "marker2", "marker2", `CREATE TRIGGER marker2 AFTER UPDATE ON session BEGIN INSERT INTO marker VALUES ('fired'); END`)...),
	"a trigger typed as index":  append([]string{`CREATE TABLE marker (x)`}, plant("index", "sqlite_autoindex_marker_1", "marker", `CREATE TRIGGER sqlite_autoindex_marker_1 AFTER UPDATE ON session BEGIN INSERT INTO marker VALUES ('fired'); END`)...),
	"a table of SQLite's name":  plant("table", "sqlite_x", "sqlite_x", `CREATE TABLE sqlite_x (a)`),
	"a virtual table":           {`CREATE VIRTUAL TABLE f USING fts5(x)`},
	"a generated column":        {`ALTER TABLE part ADD COLUMN g AS (length(data) * 2)`},
	"an expression index":       {`CREATE INDEX ix ON message (lower(data))`},
	"a comment before TRIGGER":  append([]string{`CREATE TABLE marker (x)`}, plant("table", "c", "c", `CREATE /* TABLE c ( */ TRIGGER c AFTER UPDATE ON session BEGIN INSERT INTO marker VALUES (1); END`)...),
	"a table made another name": plant("table", "innocent", "innocent", `CREATE TABLE "session2" (a)`),
}

// TestRefusesHostileSchemas: a database whose schema is not plain tables is refused at once (no statement of the
// session's runs, none waits), and a listing leaves it out. (SQLite itself finds some rows malformed: an
// object whose SQL makes another kind or another name than its row says.)
func TestRefusesHostileSchemas(t *testing.T) {
	for name, change := range hostileSchemas {
		t.Run(name, func(t *testing.T) {
			sess, root := agentstest.OpenSession(t)
			p := seed(t, root)
			hostile(t, p, change...)
			d, err := openDB(p, access{within: time.Minute, tables: listShape})
			if err == nil {
				d.Close()
			}
			require.Error(t, err)
			if !strings.Contains(err.Error(), "malformed database schema") {
				require.ErrorIs(t, err, errRefused)
			}
			t.Log(err)
			assert.Equal(t, 0, chats{}.Count(sess))
			cs, err := chats{}.List(sess)
			assert.NoError(t, err)
			assert.Empty(t, cs)
			_, held := chats{}.Holds(sess, "ses_b")
			assert.False(t, held)
		})
	}
}

// TestRefusesOtherShapes: a database without a table or a column a reader reads is refused to it.
func TestRefusesOtherShapes(t *testing.T) {
	for name, change := range map[string]string{
		"a column missing": `ALTER TABLE session DROP COLUMN directory`,
		"a table missing":  `DROP TABLE part`,
	} {
		t.Run(name, func(t *testing.T) {
			sess, root := agentstest.OpenSession(t)
			p := seed(t, root)
			hostile(t, p, change)
			_, err := openDB(p, access{within: time.Minute, tables: listShape})
			require.ErrorIs(t, err, errRefused)
			cs, err := chats{}.List(sess)
			assert.NoError(t, err)
			assert.Empty(t, cs)
			assert.Equal(t, 2, chats{}.Count(sess), "a count reads what is there")
		})
	}
}

// TestRefusesOpencode2: a database of OpenCode 2's tables is refused as what it is, not read as one with no
// conversations.
func TestRefusesOpencode2(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	p := seed(t, root)
	hostile(t, p, `DROP TABLE part`, `DROP TABLE message`, `DROP TABLE session`,
		`CREATE TABLE session_v2 (id TEXT PRIMARY KEY, directory TEXT, time_created INTEGER)`,
		`CREATE TABLE session_message (id TEXT PRIMARY KEY, session_id TEXT, data TEXT)`)
	_, err := openDB(p, access{within: time.Minute, tables: listShape})
	require.ErrorIs(t, err, errRefused)
	assert.Contains(t, err.Error(), "an OpenCode 2 database")
	_, err = openDB(p, access{within: time.Minute, tables: countShape})
	assert.Contains(t, err.Error(), "an OpenCode 2 database", "a count says so too")
	cs, err := chats{}.List(sess)
	assert.NoError(t, err)
	assert.Empty(t, cs)
}

// TestFollowNeverRunsTheSessionsSQL: a launch's UPDATE on a database with a trigger (however named or typed)
// is refused; the trigger never fires.
func TestFollowNeverRunsTheSessionsSQL(t *testing.T) {
	for _, name := range []string{"a trigger", "a trigger named sqlite_", "a trigger typed as table", "a trigger typed as index"} {
		t.Run(name, func(t *testing.T) {
			sess, root := agentstest.OpenSession(t)
			p := seed(t, root)
			hostile(t, p, hostileSchemas[name]...)
			err := Follow(sess, "/elsewhere")
			require.Error(t, err)
			if !strings.Contains(err.Error(), "malformed database schema") {
				require.ErrorIs(t, err, errRefused)
			}
			t.Log(err)
			// Read as sqlite3 would, the session's objects left out.
			hostile(t, p, `PRAGMA writable_schema = ON`, `DELETE FROM sqlite_master WHERE type <> 'table' OR name NOT IN ('session', 'marker')`)
			db, err := sql.Open("sqlite", "file:"+p+"?mode=ro")
			require.NoError(t, err)
			defer db.Close()
			var n int
			require.NoError(t, db.QueryRow(`SELECT count(*) FROM marker`).Scan(&n))
			assert.Zero(t, n, "the trigger never fired")
			require.NoError(t, db.QueryRow(`SELECT count(*) FROM session WHERE directory = '/elsewhere'`).Scan(&n))
			assert.Zero(t, n, "nothing changed")
		})
	}
}

// TestAuthorizerDeniesLateObjects: a trigger or a view made after the check (a session's process writes the file
// under SQLite) is denied when a statement would run it.
func TestAuthorizerDeniesLateObjects(t *testing.T) {
	_, root := agentstest.OpenSession(t)
	p := seed(t, root)
	d, err := openDB(p, access{write: true, within: time.Minute, tables: followShape})
	require.NoError(t, err)
	defer d.Close()
	hostile(t, p, `CREATE TABLE marker (x)`, `CREATE TRIGGER t BEFORE UPDATE ON session BEGIN INSERT INTO marker VALUES (1); END`,
		`CREATE VIEW v AS SELECT * FROM session`)
	assert.ErrorContains(t, d.exec(`UPDATE session SET directory = '/x'`), "not authorized")
	var n int
	assert.ErrorContains(t, d.row(`SELECT count(*) FROM v`, nil, &n), "prohibited")
	require.NoError(t, d.row(`SELECT count(*) FROM marker`, nil, &n))
	assert.Zero(t, n, "the trigger never fired")
	assert.ErrorContains(t, d.exec(`ATTACH DATABASE ? AS other`, filepath.Join(t.TempDir(), "x.db")), "not authorized",
		"attaching only through attach")
}

// TestDeadline: a statement that would run for good is interrupted at the handle's deadline.
func TestDeadline(t *testing.T) {
	_, root := agentstest.OpenSession(t)
	p := seed(t, root)
	hostile(t, p, `CREATE TABLE n (x)`, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000) INSERT INTO n SELECT x FROM c`)
	d, err := openDB(p, access{within: 200 * time.Millisecond})
	require.NoError(t, err)
	defer d.Close()
	var c int64
	err = d.row(`SELECT count(*) FROM n a, n b, n c, n d`, nil, &c) // 8e13 rows
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestRowCap: a statement that returns more rows than the cap fails rather than fill memory.
func TestRowCap(t *testing.T) {
	_, root := agentstest.OpenSession(t)
	p := seed(t, root)
	hostile(t, p, `CREATE TABLE n (x)`, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 11) INSERT INTO n SELECT x FROM c`)
	defer func(old int) { maxRows = old }(maxRows)
	maxRows = 10
	d, err := openDB(p, access{within: time.Minute})
	require.NoError(t, err)
	defer d.Close()
	_, err = d.column(`SELECT x FROM n`)
	assert.ErrorIs(t, err, errTooMany)
	got, err := d.column(`SELECT x FROM n LIMIT 10`)
	assert.NoError(t, err)
	assert.Len(t, got, 10)
}

// TestScrubNeverDeletes: export's scrub makes a new database: a plain database comes out with its credential
// tables empty and every other row; a trigger that would keep the logins (RAISE(IGNORE) on their DELETE)
// refuses the database; SQL of a table's that holds a second statement is never run.
func TestScrubNeverDeletes(t *testing.T) {
	_, root := agentstest.OpenSession(t)
	p := seed(t, root)
	hostile(t, p, `CREATE TABLE account (id text PRIMARY KEY, access_token text NOT NULL)`,
		`INSERT INTO account VALUES ('a', 'oc-secret-token')`)
	sess, err := layout.OpenDir(root)
	require.NoError(t, err)
	defer sess.Close()

	data, dropped, err := Scrub(sess)
	require.NoError(t, err)
	assert.Equal(t, []string{"account"}, dropped)
	assert.NotContains(t, string(data), "oc-secret-token")
	out := filepath.Join(t.TempDir(), "out.db")
	require.NoError(t, os.WriteFile(out, data, 0o600))
	d, err := openDB(out, access{within: time.Minute, tables: listShape})
	require.NoError(t, err)
	var n int
	require.NoError(t, d.row(`SELECT count(*) FROM account`, nil, &n))
	assert.Zero(t, n)
	require.NoError(t, d.row(`SELECT count(*) FROM part`, nil, &n))
	assert.Equal(t, 3, n, "the conversations' rows")
	d.Close()

	hostile(t, p, `CREATE TRIGGER keep BEFORE DELETE ON account BEGIN SELECT RAISE(IGNORE); END`)
	_, _, err = Scrub(sess)
	assert.ErrorIs(t, err, errRefused)
	hostile(t, p, `DROP TRIGGER keep`, `PRAGMA writable_schema = ON`,
		`UPDATE sqlite_master SET sql = sql || '; INSERT INTO part VALUES (1, 2, 3, 4)' WHERE name = 'project'`)
	data, _, err = Scrub(sess)
	assert.Error(t, err, "SQLite finds it malformed; were it not, remake would refuse it (TestCreateOf)")
	assert.Nil(t, data)
}

// TestUntrustedImport: an import from a database that is not plain tables is refused; one into a session whose
// database has a trigger is refused, the trigger never fired; a hostile database in another session of the store
// is left out, the import done.
func TestUntrustedImport(t *testing.T) {
	from, _ := userDB(t)
	bad := filepath.Join(t.TempDir(), "opencode.db")
	realDB(t, bad).Close()
	hostile(t, bad, hostileSchemas["a view that never ends"]...)
	_, err := Import(newStore(t), agents.ImportOptions{Agent: Agent, From: bad})
	assert.ErrorIs(t, err, errRefused)

	store := newStore(t)
	_, err = store.Create("s1", layout.CreateOptions{})
	require.NoError(t, err)
	p := filepath.Join(store.Dir("s1"), dbRel)
	realDB(t, p).Close()
	hostile(t, p, `CREATE TABLE marker (x)`, `CREATE TRIGGER t AFTER INSERT ON session BEGIN INSERT INTO marker VALUES (1); END`)
	_, err = Import(store, agents.ImportOptions{Agent: Agent, From: from, Into: "s1"})
	assert.ErrorIs(t, err, errRefused)
	assert.Equal(t, 0, count(t, sessionDB(t, store, "s1"), "marker", "1"), "the trigger never fired")

	hostile(t, p, `DROP TRIGGER t`, `DROP TABLE session`, hostileSchemas["a view that never ends"][1])
	rep, err := Import(store, agents.ImportOptions{Agent: Agent, From: from})
	require.NoError(t, err)
	assert.Len(t, rep.Imported, 2, "into sessions of their own")
}

// TestCreateOf: the SQL of an object is read as SQLite parses it.
func TestCreateOf(t *testing.T) {
	for text, want := range map[string][3]string{
		"CREATE TABLE `session` (\n `id` text)":                  {"table", "session"},
		`CREATE TABLE "a""b"(x)`:                                 {"table", `a"b`},
		`CREATE TABLE [x y] (a)`:                                 {"table", "x y"},
		`create /* c */ table -- c` + "\n" + `t(a)`:              {"table", "t"},
		"CREATE UNIQUE INDEX `ix` ON `session` (`id`)":           {"index", "ix", "session"},
		`CREATE INDEX ix ON t(a) WHERE a > 0`:                    {"index", "ix", "t"},
		`CREATE TABLE t AS SELECT 1`:                             {},
		`CREATE TABLE main.t(a)`:                                 {},
		`CREATE TEMP TABLE t(a)`:                                 {},
		`CREATE VIEW t AS SELECT 1`:                              {},
		`CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT 1; END`: {},
		`CREATE VIRTUAL TABLE t USING fts5(a)`:                   {},
		`CREATE TABLE 't'(a)`:                                    {},
		`CREATE TABLE "t`:                                        {},
		`CREATE /* TABLE t( */ TRIGGER`:                          {},
	} {
		kind, name, on := createOf(text)
		assert.Equal(t, want, [3]string{kind, name, on}, text)
	}
	for text, one := range map[string]bool{
		`CREATE TABLE t(a)`:                    true,
		`CREATE TABLE t(a);`:                   true,
		`CREATE TABLE t(a DEFAULT ';')`:        true,
		`CREATE TABLE "x;y"(a) -- ;`:           true,
		`CREATE TABLE t(a); DROP TABLE u`:      false,
		`CREATE TABLE t(a) /* ; */; SELECT 1`:  false,
		`CREATE TABLE t(a DEFAULT 'x); DROP u`: false,
		``:                                     false,
	} {
		assert.Equal(t, one, oneStatement(text), text)
	}
}

// TestOneOpener: openDB is the one place the module's code opens a session's SQLite database; a second would skip
// its checks. The other opener is search's, of the store's own index (<store>/index/search.db, outside sessions/,
// its path made from the index folder's descriptor alone): never a session's file.
func TestOneOpener(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	var openers []string
	err = filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && (strings.HasPrefix(e.Name(), ".") || e.Name() == "e2e" || e.Name() == "testdata") {
			return filepath.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, call := range []string{"sql.Open(", "sql.OpenDB(", "sqlite.NewConnector(", "sqlite.Driver{"} {
			if bytes.Contains(b, []byte(call)) {
				rel, _ := filepath.Rel(root, p)
				openers = append(openers, rel+": "+call)
			}
		}
		return nil
	})
	require.NoError(t, err)
	// opencodetest writes the databases tests make; it reads none a session made.
	assert.ElementsMatch(t, []string{"agents/opencode/untrusted.go: sql.Open(", "agents/opencode/untrusted.go: sqlite.Driver{",
		"search/index.go: sql.Open(", "agents/opencode/opencodetest/opencodetest.go: sql.Open("}, openers)
}
