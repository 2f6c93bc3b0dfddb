package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"database/sql"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"
)

// A session's opencode database is the session's to write: its processes can make `session` a view that never
// ends, or put triggers in it (named as SQLite's own, with writable_schema) that run on the statements sessionfs
// makes. These tests plant such databases in the store's session folders, as the session's own files, and run
// the CLI as root.

// hangBound is how long a CLI call may take before it counts as hung: the calls below take well under a second
// when nothing runs the session's SQL, and never return when something does.
const hangBound = 60 * time.Second

// cliBounded runs the CLI as cli does, killed at hangBound (the test fails then, naming the call).
func cliBounded(t *testing.T, store string, env []string, args ...string) (result, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(append(os.Environ(), "SESSIONFS_STORE="+store), env...)
	start := time.Now()
	r := runResult(t, cmd)
	took := time.Since(start)
	if ctx.Err() != nil {
		t.Fatalf("sessionfs %s hung (killed after %s): %s", strings.Join(args, " "), hangBound, r.stderr)
	}
	return r, took
}

// opencodeDBOf is session id's opencode database in store.
func opencodeDBOf(store, id string) string {
	return filepath.Join(store, "sessions", id, ".opencode", "data", "opencode", "opencode.db")
}

// plantOpencodeDB writes an opencode database at p (of the part of opencode's schema sessionfs reads: one
// conversation, conv, begun in /work) and runs hostile on it, as a session's process with sqlite3 would
// (writable_schema allowed).
func plantOpencodeDB(t *testing.T, p, conv string, hostile ...string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	db, err := sql.Open("sqlite", "file:"+p)
	require.NoError(t, err)
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range append([]string{
		`CREATE TABLE project (id text PRIMARY KEY, worktree text NOT NULL)`,
		`CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text, directory text NOT NULL,
			path text, time_created integer NOT NULL, time_updated integer NOT NULL)`,
		`CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL,
			time_updated integer NOT NULL, data text NOT NULL)`,
		`CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
			time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL)`,
		`CREATE TABLE account (id text PRIMARY KEY, access_token text NOT NULL)`,
		`INSERT INTO project VALUES ('global', '/')`,
		`INSERT INTO session VALUES ('` + conv + `', 'global', NULL, '/work', 'work', 1795600000000, 1795600001000)`,
		`INSERT INTO message VALUES ('msg_1', '` + conv + `', 1795600000000, 1795600000000, '{"role":"user"}')`,
		`INSERT INTO part VALUES ('prt_1', 'msg_1', '` + conv + `', 1795600000000, 1795600000000, '{"type":"text","text":"hello"}')`,
	}, hostile...) {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
}

// neverEnding makes `session` a view over a recursive query that never ends.
var neverEnding = []string{`DROP TABLE session`,
	`CREATE VIEW session AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r)
	SELECT 'ses_' || n AS id, 'global' AS project_id, NULL AS parent_id, '/work' AS directory, 'work' AS path,
		n AS time_created, n AS time_updated FROM r`}

// TestHostileOpencodeDBListing: one session's opencode database whose `session` is a view that never ends
// leaves ls, find and resume as they are for every other session: each returns, says the session's
// conversations are left out, and lists or finds the others.
func TestHostileOpencodeDBListing(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: the CLI runs as root, as the daemon's admin does")
	store := t.TempDir()
	ok(t, store, "new", "evil")
	ok(t, store, "new", "good")
	plantOpencodeDB(t, opencodeDBOf(store, "evil"), "ses_evil0000001", neverEnding...)
	plantOpencodeDB(t, opencodeDBOf(store, "good"), "ses_good0000001")

	r, took := cliBounded(t, store, nil, "ls")
	t.Logf("ls with a never-ending view in one session's database took %s", took)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "evil")
	assert.Regexp(t, `(?m)^good\s.*\s1\s`, r.stdout, "the other session's conversation counted")
	assert.Contains(t, r.stderr, "opencode conversations are left out")
	assert.Contains(t, r.stderr, `view "session"`)

	r, took = cliBounded(t, store, nil, "find", "ses_good0000001")
	t.Logf("find took %s", took)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "good")

	// resume finds the conversation's session and starts opencode there ("opencode --session ID"): a stand-in
	// on PATH prints what it was given.
	path := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(path, "opencode"), []byte("#!/bin/sh\necho opencode \"$@\"\n"), 0o755))
	r, took = cliBounded(t, store, []string{"PATH=" + path + ":" + os.Getenv("PATH")}, "resume", "ses_good0000001")
	t.Logf("resume took %s", took)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "opencode --session ses_good0000001")

	r, _ = cliBounded(t, store, nil, "show", "evil", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "opencode conversations are left out")
}

// TestHostileOpencodeDBImport: "import --agent opencode" from a database whose `session` never ends is refused;
// an import from a sound one, into a store where one session's database is that one, is done.
func TestHostileOpencodeDBImport(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: the CLI runs as root, as the daemon's admin does")
	store := t.TempDir()
	ok(t, store, "new", "evil")
	evil := opencodeDBOf(store, "evil")
	plantOpencodeDB(t, evil, "ses_evil0000001", neverEnding...)

	r, _ := cliBounded(t, store, nil, "import", "--agent", "opencode", "--from", evil)
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, `refused: view "session"`)

	mine := filepath.Join(t.TempDir(), "opencode.db")
	plantOpencodeDB(t, mine, "ses_mine0000001")
	r, _ = cliBounded(t, store, nil, "import", "--agent", "opencode", "--from", mine, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "ses_mine0000001")
	assert.Contains(t, r.stderr, "opencode conversations are left out", "the evil session's, looked in for the conversation")
}

// TestOpencodeTriggerNeverFires: every launch with --agent opencode moves the session's conversations to its cwd
// with an UPDATE: a trigger of the session's on it, plainly named or named as SQLite's own (planted with
// writable_schema, past the "same schema" check), never fires; the launch goes on with a warning.
func TestOpencodeTriggerNeverFires(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: the CLI runs as root, as the daemon's admin does")
	for name, trigger := range map[string][]string{
		"plain": {`CREATE TRIGGER t AFTER UPDATE ON session BEGIN INSERT INTO marker VALUES ('fired as root'); END`},
		"sqlite_": {`PRAGMA writable_schema = ON`,
			`INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql) VALUES ('trigger', 'sqlite_t', 'session', 0,
				'CREATE TRIGGER sqlite_t AFTER UPDATE ON session BEGIN INSERT INTO marker VALUES (''fired as root''); END')`,
			`PRAGMA writable_schema = OFF`},
	} {
		t.Run(name, func(t *testing.T) {
			store := t.TempDir()
			ok(t, store, "new", "s1")
			p := opencodeDBOf(store, "s1")
			plantOpencodeDB(t, p, "ses_trig0000001", append([]string{`CREATE TABLE marker (x text)`}, trigger...)...)

			r, _ := cliBounded(t, store, nil, "exec", "s1", "--agent", "opencode", "--", "true")
			require.Equal(t, 0, r.code, r.stderr)
			t.Log(r.stderr)
			db, err := sql.Open("sqlite", "file:"+p+"?mode=ro")
			require.NoError(t, err)
			defer db.Close()
			var fired int
			require.NoError(t, db.QueryRow(`SELECT count(*) FROM marker`).Scan(&fired))
			assert.Zero(t, fired, "the session's trigger ran in the root CLI")
			assert.Contains(t, r.stderr, "its conversations stay where they were")
		})
	}
}

// TestExportScrubWithTrigger: export takes opencode's logins out of the database it packs; a trigger of the
// session's that keeps them (RAISE(IGNORE) on their DELETE) must not put the token in the archive.
func TestExportScrubWithTrigger(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: the CLI runs as root, as the daemon's admin does")
	const token = "oc-session-login-token"
	store := t.TempDir()
	ok(t, store, "new", "s1")
	plantOpencodeDB(t, opencodeDBOf(store, "s1"), "ses_expo0000001",
		`INSERT INTO account VALUES ('a', '`+token+`')`,
		`CREATE TRIGGER keep BEFORE DELETE ON account BEGIN SELECT RAISE(IGNORE); END`)

	out := filepath.Join(t.TempDir(), "s1.tar.zst")
	r, _ := cliBounded(t, store, nil, "export", "s1", "-o", out)
	require.Equal(t, 0, r.code, r.stderr)
	t.Log(r.stderr)
	archive, err := os.ReadFile(out)
	require.NoError(t, err)
	zr, err := zstd.NewReader(bytes.NewReader(archive))
	require.NoError(t, err)
	defer zr.Close()
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		body, err := io.ReadAll(tr)
		require.NoError(t, err)
		assert.False(t, bytes.Contains(body, []byte(token)), "the login packed in %s", hdr.Name)
	}
}

// TestOpencodeImportTriggerNeverFires: "import --agent opencode --into" merges rows into the session's own
// database with INSERTs: a trigger of the session's on them, named as SQLite's own (planted with writable_schema,
// so the schemas still compare equal), never fires.
func TestOpencodeImportTriggerNeverFires(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: the CLI runs as root, as the daemon's admin does")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	p := opencodeDBOf(store, "s1")
	plantOpencodeDB(t, p, "ses_have0000001", `PRAGMA writable_schema = ON`,
		`INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql) VALUES ('trigger', 'sqlite_t', 'session', 0,
			'CREATE TRIGGER sqlite_t AFTER INSERT ON session BEGIN INSERT INTO account VALUES (''fired'', ''as root''); END')`,
		`PRAGMA writable_schema = OFF`)
	mine := filepath.Join(t.TempDir(), "opencode.db")
	plantOpencodeDB(t, mine, "ses_mine0000001")

	r, _ := cliBounded(t, store, nil, "import", "--agent", "opencode", "--from", mine, "--into", "s1")
	t.Log(r.stderr)
	db, err := sql.Open("sqlite", "file:"+p+"?mode=ro")
	require.NoError(t, err)
	defer db.Close()
	var fired int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM account WHERE id = 'fired'`).Scan(&fired))
	assert.Zero(t, fired, "the session's trigger ran in the root CLI")
	assert.NotEqual(t, 0, r.code, "the import into a database with a trigger is refused")
}
