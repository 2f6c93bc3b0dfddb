package opencode

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// The ids of the conversations the source holds: a top-level one with a subagent, begun in /src/app, and one
// begun elsewhere.
const (
	convA = "ses_aaaa00000001"
	subA  = "ses_aaaa00000002"
	convB = "ses_bbbb00000001"
	token = "tok-never-copied"
)

// userDB makes a user's opencode database (XDG_DATA_HOME/opencode/opencode.db below a new folder): two
// conversations, their todos and events, a login in each credential table, a share's secret, a project's
// permission. It returns the database's folder and the database, open.
func userDB(t *testing.T) (string, *sql.DB) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "opencode")
	db := realDB(t, filepath.Join(dir, "opencode.db"))
	addProject(t, db, "global", "/")
	addProject(t, db, "4b82", "/src/app")
	addSession(t, db, convA, "", "4b82", "/src/app/web", 1795600000000)
	addMessage(t, db, "msg_a1", convA, "user", "fix the build", 1795600000100, false)
	addMessage(t, db, "msg_a2", convA, "assistant", "done", 1795600000200, false)
	addSession(t, db, subA, convA, "4b82", "/src/app/web", 1795600000150)
	addMessage(t, db, "msg_s1", subA, "user", "look around", 1795600000160, false)
	mustExec(t, db, `INSERT INTO todo VALUES (?, 'ship it', 'pending', 'high', 0, 1, 1)`, convA)
	addSession(t, db, convB, "", "global", "/tmp/other", 1795600001000)
	addMessage(t, db, "msg_b1", convB, "user", "hello", 1795600001100, false)
	mustExec(t, db, `INSERT INTO account VALUES ('acc', 'me@example.com', 'https://x', ?, ?, NULL, 1, 1)`, token, token)
	mustExec(t, db, `INSERT INTO credential (id, label, value, time_created, time_updated) VALUES ('cred', 'key', ?, 1, 1)`, token)
	mustExec(t, db, `INSERT INTO control_account VALUES ('me@example.com', 'https://x', ?, ?, NULL, 1, 1, 1)`, token, token)
	mustExec(t, db, `INSERT INTO session_share VALUES (?, 'shr', ?, 'https://share', 1, 1)`, convA, token)
	mustExec(t, db, `INSERT INTO permission VALUES ('per', '4b82', 'allow', 'bash', 1, 1)`)
	return dir, db
}

func newStore(t *testing.T) *layout.Store {
	t.Helper()
	store, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	return store
}

// sessionDB opens session id's opencode database in store, read-only.
func sessionDB(t *testing.T, store *layout.Store, id string) *sql.DB {
	t.Helper()
	p := filepath.Join(store.Dir(id), dbRel)
	require.FileExists(t, p)
	db, err := sql.Open("sqlite", "file:"+p+"?mode=ro")
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// TestImportNewSessions: each conversation lands in a session of its own, named after it, in a database of
// opencode's schema (its migrations recorded) holding that conversation only, its subagent's, their rows and
// project; no login nor share secret, not even in freed pages; the cwd recorded; the session's owner given the
// file. A second run imports nothing.
func TestImportNewSessions(t *testing.T) {
	from, _ := userDB(t)
	store := newStore(t)
	rep, err := Import(store, agents.ImportOptions{Agent: Agent, From: from})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{convA, convB}, rep.Sessions)
	assert.ElementsMatch(t, []string{convA, convB}, rep.Imported)
	assert.Empty(t, rep.Malformed)

	db := sessionDB(t, store, convA)
	assert.Equal(t, 2, count(t, db, "session", "1"), "the conversation and its subagent's")
	assert.Equal(t, 1, count(t, db, "session", "id = ? AND directory = '/src/app/web'", convA), "its cwd as it was")
	assert.Equal(t, 3, count(t, db, "message", "1"))
	assert.Equal(t, 3, count(t, db, "part", "1"))
	assert.Equal(t, 1, count(t, db, "todo", "1"))
	assert.Equal(t, 2, count(t, db, "event", "1"))
	assert.Equal(t, 2, count(t, db, "event_sequence", "1"))
	assert.Equal(t, 1, count(t, db, "project", "id = '4b82'"), "its project, not the others")
	assert.Equal(t, 1, count(t, db, "project", "1"))
	assert.Equal(t, 38, count(t, db, "migration", "1"), "opencode 1.18.33's migrations, done")
	for _, table := range []string{"account", "credential", "control_account", "session_share", "permission"} {
		assert.Equal(t, 0, count(t, db, table, "1"), table)
	}
	raw, err := os.ReadFile(filepath.Join(store.Dir(convA), dbRel))
	require.NoError(t, err)
	assert.False(t, bytes.Contains(raw, []byte(token)), "no login, anywhere in the file")
	assert.Equal(t, 1, count(t, sessionDB(t, store, convB), "session", "1"))

	m, err := store.Get(convA)
	require.NoError(t, err)
	assert.Contains(t, m.Cwds, "/src/app/web")
	assert.Equal(t, "opencode", m.Labels["imported-from"])

	cs, err := chats{}.List(open1(t, store, convA))
	require.NoError(t, err)
	require.Len(t, cs, 1)
	assert.Equal(t, "fix the build", cs[0].FirstPrompt, "show reads it")
	assert.Equal(t, 1, cs[0].Subagents)

	rep, err = Import(store, agents.ImportOptions{Agent: Agent, From: filepath.Join(from, "opencode.db")})
	require.NoError(t, err)
	assert.Empty(t, rep.Imported, "nothing new")
	assert.Empty(t, rep.Sessions)
	assert.ElementsMatch(t, []string{convA, convB}, rep.Unchanged)
}

// open1 opens session id of store.
func open1(t *testing.T, store *layout.Store, id string) *layout.Dir {
	t.Helper()
	sess, err := store.OpenSession(id)
	require.NoError(t, err)
	t.Cleanup(func() { sess.Close() })
	return sess
}

// TestImportOwner: the database made in a session belongs to the session's owner, as opencode runs as that user.
func TestImportOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files away")
	}
	from, _ := userDB(t)
	store := newStore(t)
	_, err := store.Create("s1", layout.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, os.Chown(store.Dir("s1"), 1234, 1234))
	_, err = Import(store, agents.ImportOptions{Agent: Agent, From: from, Into: "s1"})
	require.NoError(t, err)
	for _, p := range []string{".opencode", ".opencode/data", ".opencode/data/opencode", dbRel} {
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(filepath.Join(store.Dir("s1"), p), &st))
		assert.Equal(t, uint32(1234), st.Uid, p)
	}
}

// TestImportMerges: into a session whose opencode database holds conversations of its own, the imported rows are
// added and its own kept; a conversation that grew at the source is brought up to date, one continued in the
// session since is left as the session has it.
func TestImportMerges(t *testing.T) {
	from, src := userDB(t)
	store := newStore(t)
	_, err := store.Create("s1", layout.CreateOptions{})
	require.NoError(t, err)
	own := realDB(t, filepath.Join(store.Dir("s1"), dbRel))
	addProject(t, own, "global", "/session/workspace")
	addSession(t, own, "ses_cccc00000001", "", "global", "/session/workspace", 1795600002000)
	addMessage(t, own, "msg_c1", "ses_cccc00000001", "user", "mine", 1795600002100, false)
	require.NoError(t, own.Close())

	rep, err := Import(store, agents.ImportOptions{Agent: Agent, From: from, Into: "s1"})
	require.NoError(t, err)
	assert.Empty(t, rep.Sessions)
	assert.ElementsMatch(t, []string{convA, convB}, rep.Imported)
	db := sessionDB(t, store, "s1")
	assert.Equal(t, 4, count(t, db, "session", "1"), "its own, both imported and a subagent's")
	assert.Equal(t, 1, count(t, db, "message", "id = 'msg_c1'"), "its own kept")
	assert.Equal(t, "/session/workspace", str(t, db, `SELECT worktree FROM project WHERE id = 'global'`), "its project row kept")
	assert.Equal(t, 0, count(t, db, "account", "1"))

	// Grown at the source: brought up to date. Continued in the session: kept.
	addMessage(t, src, "msg_b2", convB, "assistant", "hi", 1795600003000, false)
	sdb, err := sql.Open("sqlite", filepath.Join(store.Dir("s1"), dbRel))
	require.NoError(t, err)
	addMessage(t, sdb, "msg_a9", convA, "user", "continued here", 1795600004000, false)
	require.NoError(t, sdb.Close())
	rep, err = Import(store, agents.ImportOptions{Agent: Agent, From: from, Into: "s1"})
	require.NoError(t, err)
	assert.Equal(t, []string{convB}, rep.Imported)
	assert.Equal(t, []string{convA}, rep.Unchanged)
	db = sessionDB(t, store, "s1")
	assert.Equal(t, 1, count(t, db, "message", "id = 'msg_b2'"))
	assert.Equal(t, 1, count(t, db, "message", "id = 'msg_a9'"), "the session's own turn kept")
}

func str(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	var s string
	require.NoError(t, db.QueryRow(q).Scan(&s))
	return s
}

// TestImportProject: --project keeps the conversations begun in PATH or below it.
func TestImportProject(t *testing.T) {
	from, _ := userDB(t)
	store := newStore(t)
	rep, err := Import(store, agents.ImportOptions{Agent: Agent, From: from, Project: "/src/app"})
	require.NoError(t, err)
	assert.Equal(t, []string{convA}, rep.Imported)
	assert.False(t, store.Exists(convB))
	rep, err = Import(store, agents.ImportOptions{Agent: Agent, From: from, Project: "/src/ap"})
	require.NoError(t, err)
	assert.Empty(t, rep.Imported, "a folder's name is taken whole")
}

// TestImportDryRun: a dry run says what it would import and changes nothing, a session's database included.
func TestImportDryRun(t *testing.T) {
	from, _ := userDB(t)
	store := newStore(t)
	rep, err := Import(store, agents.ImportOptions{Agent: Agent, From: from, DryRun: true})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{convA, convB}, rep.Imported)
	assert.ElementsMatch(t, []string{convA, convB}, rep.Sessions)
	ids, err := store.IDs()
	require.NoError(t, err)
	assert.Empty(t, ids)

	_, err = store.Create("s1", layout.CreateOptions{})
	require.NoError(t, err)
	p := filepath.Join(store.Dir("s1"), dbRel)
	own := realDB(t, p)
	require.NoError(t, own.Close())
	before, err := os.ReadFile(p)
	require.NoError(t, err)
	rep, err = Import(store, agents.ImportOptions{Agent: Agent, From: from, Into: "s1", DryRun: true})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{convA, convB}, rep.Imported)
	after, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, before, after)
	m, err := store.Get("s1")
	require.NoError(t, err)
	assert.Empty(t, m.Cwds)
}

// TestImportOtherVersion: a session's database of another opencode version (another schema, or the same tables
// with other migrations done) is refused, left as it is. (One with a trigger is refused before: TestUntrustedImport.)
func TestImportOtherVersion(t *testing.T) {
	from, _ := userDB(t)
	for name, change := range map[string]string{
		"schema":     `ALTER TABLE session ADD COLUMN later text`,
		"migrations": `DELETE FROM migration WHERE id = '20260622202450_simplify_session_input'`,
	} {
		t.Run(name, func(t *testing.T) {
			store := newStore(t)
			_, err := store.Create("s1", layout.CreateOptions{})
			require.NoError(t, err)
			p := filepath.Join(store.Dir("s1"), dbRel)
			own := realDB(t, p)
			mustExec(t, own, change)
			require.NoError(t, own.Close())
			_, err = Import(store, agents.ImportOptions{Agent: Agent, From: from, Into: "s1"})
			assert.ErrorContains(t, err, "another opencode version")
			assert.Equal(t, 0, count(t, sessionDB(t, store, "s1"), "session", "1"))
		})
	}
}

// TestImportHostileTarget: a session is its processes' to write. A FIFO where SQLite keeps the database's log
// fails the import (never hangs it); a database that is a link is not followed; a log left without its
// database is not replayed into a new one.
func TestImportHostileTarget(t *testing.T) {
	from, _ := userDB(t)
	store := newStore(t)
	_, err := store.Create("s1", layout.CreateOptions{})
	require.NoError(t, err)
	p := filepath.Join(store.Dir("s1"), dbRel)
	own := realDB(t, p)
	require.NoError(t, own.Close())

	require.NoError(t, unix.Mkfifo(p+"-wal", 0o644))
	errc := make(chan error, 1)
	go func() {
		_, err := Import(store, agents.ImportOptions{Agent: Agent, From: from, Into: "s1"})
		errc <- err
	}()
	select {
	case err := <-errc:
		assert.ErrorContains(t, err, "not a regular file")
	case <-time.After(30 * time.Second):
		t.Fatal("hung on a FIFO beside the session's database")
	}
	require.NoError(t, os.Remove(p+"-wal"))

	victim := filepath.Join(t.TempDir(), "victim.db")
	require.NoError(t, os.Rename(p, victim))
	require.NoError(t, os.Symlink(victim, p))
	before, err := os.ReadFile(victim)
	require.NoError(t, err)
	_, err = Import(store, agents.ImportOptions{Agent: Agent, From: from, Into: "s1"})
	assert.ErrorContains(t, err, "not a regular file")
	after, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the link's target untouched")
	link, err := os.Readlink(p)
	require.NoError(t, err)
	assert.Equal(t, victim, link)

	require.NoError(t, os.Remove(p))
	require.NoError(t, os.WriteFile(p+"-wal", []byte("a log of another database"), 0o644))
	_, err = Import(store, agents.ImportOptions{Agent: Agent, From: from, Into: "s1"})
	assert.ErrorContains(t, err, "without its database")
	assert.NoFileExists(t, p)
}

// TestImportNoSource: no database where --from points is an error naming it.
func TestImportNoSource(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "opencode")
	require.NoError(t, os.Mkdir(missing, 0o755))
	_, err := Import(newStore(t), agents.ImportOptions{Agent: Agent, From: missing})
	assert.ErrorContains(t, err, filepath.Join(missing, "opencode.db"))
}

// TestImportHeldElsewhere: a conversation a session of the store holds already is brought up to date there, not copied
// into a session of its own.
func TestImportHeldElsewhere(t *testing.T) {
	from, src := userDB(t)
	store := newStore(t)
	_, err := Import(store, agents.ImportOptions{Agent: Agent, From: from, Into: "s1"})
	require.NoError(t, err)
	addMessage(t, src, "msg_b2", convB, "assistant", "hi", 1795600003000, false)
	rep, err := Import(store, agents.ImportOptions{Agent: Agent, From: from})
	require.NoError(t, err)
	assert.Empty(t, rep.Sessions)
	assert.Equal(t, []string{convB}, rep.Imported)
	assert.Equal(t, []string{convA}, rep.Unchanged)
	assert.Equal(t, 1, count(t, sessionDB(t, store, "s1"), "message", "id = 'msg_b2'"))
}
