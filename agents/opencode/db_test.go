package opencode

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents/agentstest"
)

// schema is the part of opencode 1.18.33's database sessionfs reads and writes (its columns as opencode made
// them).
const schema = `
CREATE TABLE project (id text PRIMARY KEY, worktree text NOT NULL);
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text, directory text NOT NULL, path text,
	time_created integer NOT NULL, time_updated integer NOT NULL);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL, data text NOT NULL);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL, data text NOT NULL);
INSERT INTO project VALUES ('global', '/'), ('4b82', '/src/repo');
INSERT INTO session VALUES ('ses_b', 'global', NULL, '/tmp/a', 'tmp/a', 1795600000000, 1795600009000),
	('ses_sub', 'global', 'ses_b', '/tmp/a', 'tmp/a', 1795600001000, 1795600002000),
	('ses_r', '4b82', NULL, '/src/repo/api', 'api', 1795500000000, 1795500001000);
INSERT INTO message VALUES ('msg_1', 'ses_b', 1795600000000, '{"role":"user"}'),
	('msg_2', 'ses_b', 1795600001000, '{"role":"assistant","path":{"cwd":"/tmp/a","root":"/"}}'),
	('msg_3', 'ses_b', 1795600002000, 'not json');
INSERT INTO part VALUES ('prt_1', 'msg_1', 'ses_b', '{"type":"text","text":"fix the build"}'),
	('prt_2', 'msg_1', 'ses_b', '{"type":"text","text":"context","synthetic":true}'),
	('prt_3', 'msg_2', 'ses_b', '{"type":"text","text":"done"}');
`

func seed(t *testing.T, root string) string {
	t.Helper()
	p := filepath.Join(root, dbRel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	db, err := sql.Open("sqlite", p)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(schema)
	require.NoError(t, err)
	return p
}

func TestChats(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	assert.Equal(t, 0, chats{}.Count(sess), "no database: none")
	require.NoError(t, Follow(sess, "/x"), "no database: nothing to move")
	seed(t, root)

	assert.Equal(t, 2, chats{}.Count(sess), "top-level conversations only")
	cs, err := chats{}.List(sess)
	require.NoError(t, err)
	require.Len(t, cs, 2)
	c := cs[0]
	assert.Equal(t, "ses_b", c.ID)
	assert.Equal(t, "opencode", c.Agent)
	assert.Equal(t, "fix the build", c.FirstPrompt, "the user's text, not opencode's synthetic part")
	assert.Equal(t, 2, c.Messages)
	assert.Equal(t, 1, c.Malformed)
	assert.Equal(t, 1, c.Subagents)
	assert.Equal(t, []string{"/tmp/a"}, c.Cwds)

	rel, ok := chats{}.Holds(sess, "ses_sub")
	assert.True(t, ok)
	assert.Equal(t, dbRel, rel)
	_, ok = chats{}.Holds(sess, "ses_none")
	assert.False(t, ok)
}

func TestFollow(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	p := seed(t, root)
	require.NoError(t, Follow(sess, "/src/repo/web"))
	db, err := sql.Open("sqlite", p)
	require.NoError(t, err)
	defer db.Close()
	got := map[string][2]string{}
	rows, err := db.Query(`SELECT id, directory, path FROM session`)
	require.NoError(t, err)
	for rows.Next() {
		var id, dir, rel string
		require.NoError(t, rows.Scan(&id, &dir, &rel))
		got[id] = [2]string{dir, rel}
	}
	require.NoError(t, rows.Close())
	assert.Equal(t, map[string][2]string{
		"ses_b":   {"/src/repo/web", "src/repo/web"}, // below the global project's worktree, /
		"ses_sub": {"/src/repo/web", "src/repo/web"},
		"ses_r":   {"/src/repo/web", "web"},
	}, got)
}

func TestHostileDatabase(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	outside := t.TempDir()
	real := seed(t, outside)
	p := filepath.Join(root, dbRel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.Symlink(real, p))
	assert.Equal(t, 0, chats{}.Count(sess), "a link is not followed")
	assert.Error(t, Follow(sess, "/x"))
	require.NoError(t, os.Remove(p))
	require.NoError(t, os.RemoveAll(filepath.Join(root, ".opencode", "data")))
	require.NoError(t, os.Symlink(filepath.Dir(filepath.Dir(real)), filepath.Join(root, ".opencode", "data")))
	assert.Equal(t, 0, chats{}.Count(sess), "nor a linked folder")
	_, ok := chats{}.Holds(sess, "ses_b")
	assert.False(t, ok)
}

// TestHostileSidecars: SQLite opens the files beside a database by name. A FIFO put there must not hang a read
// or a launch, and a link must not lead a write out of the session.
func TestHostileSidecars(t *testing.T) {
	for _, suffix := range sidecars {
		t.Run(suffix, func(t *testing.T) {
			sess, root := agentstest.OpenSession(t)
			p := seed(t, root)
			require.NoError(t, unix.Mkfifo(p+suffix, 0o644))
			done := make(chan struct{})
			go func() {
				defer close(done)
				if suffix == "-wal" {
					assert.Equal(t, 0, chats{}.Count(sess), "a FIFO for a log is not read")
				} else {
					assert.Equal(t, 2, chats{}.Count(sess), "a read opens nothing of the session's but the database and its log")
				}
				assert.ErrorContains(t, Follow(sess, "/x"), "not a regular file", "a launch refuses")
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("hung on a FIFO beside the database")
			}
			require.NoError(t, os.Remove(p+suffix))

			victim := filepath.Join(t.TempDir(), "victim")
			require.NoError(t, os.WriteFile(victim, []byte("precious"), 0o644))
			require.NoError(t, os.Symlink(victim, p+suffix))
			assert.ErrorContains(t, Follow(sess, "/x"), "not a regular file")
			b, err := os.ReadFile(victim)
			require.NoError(t, err)
			assert.Equal(t, "precious", string(b))
		})
	}
}
