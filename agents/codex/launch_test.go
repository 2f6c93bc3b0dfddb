package codex

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/sessionfs/sessionfs/agents/agentstest"
)

// stateDB makes a state index as Codex 0.171.0's (a threads table with a trigger of its own) naming rollouts.
func stateDB(t *testing.T, p string, rollouts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", p)
	require.NoError(t, err)
	defer db.Close()
	for _, q := range []string{
		`CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT NOT NULL, created_at INTEGER, created_at_ms INTEGER)`,
		`CREATE TRIGGER threads_created_at_ms_after_insert AFTER INSERT ON threads WHEN NEW.created_at_ms IS NULL
			BEGIN UPDATE threads SET created_at_ms = NEW.created_at * 1000 WHERE id = NEW.id; END`,
	} {
		_, err := db.Exec(q)
		require.NoError(t, err)
	}
	for i, r := range rollouts {
		_, err := db.Exec(`INSERT INTO threads (id, rollout_path, created_at) VALUES (?, ?, 1)`, string(rune('a'+i)), r)
		require.NoError(t, err)
	}
}

// TestLaunchKeepsAnIndexOfItsOwnFolder: an index naming rollouts beneath the Codex folder the run sees stays; one
// naming a rollout elsewhere (the host's path in a container, a planted one, a path that climbs out) or that is
// not a database is moved aside with its log, and Codex builds it again from the rollouts.
func TestLaunchKeepsAnIndexOfItsOwnFolder(t *testing.T) {
	root := "/session"
	own := root + "/.codex/sessions/2026/12/03/rollout-2026-12-03T10-00-00-0a1b2c3d-0000-4000-8000-000000000001.jsonl"
	for name, tc := range map[string]struct {
		rollouts []string
		garbage  bool
		kept     bool
	}{
		"its own":                {rollouts: []string{own}, kept: true},
		"none yet":               {kept: true},
		"the host's":             {rollouts: []string{own, "/home/u/agent-sessions/sessions/s1/.codex/sessions/x.jsonl"}},
		"planted at a user file": {rollouts: []string{"/home/u/.bashrc"}},
		"climbing out":           {rollouts: []string{root + "/.codex/../../home/u/.bashrc"}},
		"a sibling folder":       {rollouts: []string{root + "/.codex-evil/x.jsonl"}},
		"not a database":         {garbage: true},
	} {
		t.Run(name, func(t *testing.T) {
			sess, dir := agentstest.OpenSession(t)
			codex := filepath.Join(dir, ".codex")
			require.NoError(t, os.MkdirAll(codex, 0o700))
			p := filepath.Join(codex, "state_5.sqlite")
			if tc.garbage {
				require.NoError(t, os.WriteFile(p, []byte("not SQLite"), 0o600))
			} else {
				stateDB(t, p, tc.rollouts...)
			}
			require.NoError(t, os.WriteFile(p+"-wal", nil, 0o600))
			require.NoError(t, launch(sess, root, root+"/workspace"))
			aside, err := filepath.Glob(filepath.Join(codex, "state_5.sqlite.sessionfs-*"))
			require.NoError(t, err)
			if tc.kept {
				assert.FileExists(t, p)
				assert.Empty(t, aside)
				return
			}
			assert.NoFileExists(t, p, "moved aside: Codex builds it again from the rollouts")
			assert.NoFileExists(t, p+"-wal", "its log with it")
			assert.Len(t, aside, 2, "the index and its log, kept")
		})
	}
	// A link in the index's place is no index (never followed), and no Codex folder is nothing to do.
	sess, dir := agentstest.OpenSession(t)
	require.NoError(t, launch(sess, root, root))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".codex"), 0o700))
	victim := filepath.Join(t.TempDir(), "victim.sqlite")
	stateDB(t, victim, "/home/u/.bashrc")
	require.NoError(t, os.Symlink(victim, filepath.Join(dir, ".codex", "state_5.sqlite")))
	require.NoError(t, launch(sess, root, root))
	assert.FileExists(t, victim, "the link's target is left as it is")
}

// TestLaunchKeepsThreeIndexesAside: a session used from the host and from containers in turn moves an index aside
// at each switch; the three newest are kept, with their logs.
func TestLaunchKeepsThreeIndexesAside(t *testing.T) {
	sess, dir := agentstest.OpenSession(t)
	codex := filepath.Join(dir, ".codex")
	require.NoError(t, os.MkdirAll(codex, 0o700))
	for i := range 5 {
		stateDB(t, filepath.Join(codex, "state_5.sqlite"), fmt.Sprintf("/elsewhere/%d/rollout.jsonl", i))
		require.NoError(t, os.WriteFile(filepath.Join(codex, "state_5.sqlite-wal"), nil, 0o600))
		require.NoError(t, launch(sess, "/session", "/session/workspace"))
	}
	aside, err := filepath.Glob(filepath.Join(codex, "state_5.sqlite.sessionfs-*"))
	require.NoError(t, err)
	assert.Len(t, aside, 2*keptAside, "three indexes and their logs: %v", aside)
}
