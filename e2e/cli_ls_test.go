package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ls filters by label, prints ids alone (-q) or through a template (--format), as docker ls does; show takes
// --format too.
func TestListFilterQuietFormat(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "a1", "--label", "team=web", "--label", "stage=review")
	ok(t, store, "new", "a2", "--label", "team=web")
	ok(t, store, "new", "b1", "--label", "team=cli")
	assert.Equal(t, "a1\na2\nb1\n", ok(t, store, "ls", "-q"))
	assert.Equal(t, "a1\na2\n", ok(t, store, "ls", "-q", "--filter", "label=team=web"))
	assert.Equal(t, "a1\n", ok(t, store, "ls", "-q", "--filter", "label=team=web", "--filter", "label=stage"))
	assert.Equal(t, "b1 team=cli 0\n", ok(t, store, "ls", "--filter", "label=team=cli", "--format", "{{.ID}} {{range $k, $v := .Labels}}{{$k}}={{$v}}{{end}} {{.Conversations}}"))
	assert.Equal(t, filepath.Join(store, "sessions", "a2", "workspace")+"\n", ok(t, store, "show", "a2", "--format", "{{.Store.Workspace}}"))
	for _, args := range [][]string{
		{"ls", "--filter", "team=web"}, {"ls", "--format", "{{.Nope"}, {"ls", "-q", "--json"}, {"show", "a1", "--format", "{{", "--json"},
	} {
		r := cli(t, store, args...)
		assert.Equal(t, 125, r.code, "%v", args)
		assert.Contains(t, r.stderr, "--help)", "%v: a usage error", args)
	}
}

// ls --sort orders by creation, activity (newest first) or size (largest first); a bad order is a usage error.
func TestLsSort(t *testing.T) {
	store := t.TempDir()
	for _, id := range []string{"b", "a", "c"} {
		ok(t, store, "new", id)
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "a", "workspace", "big"), make([]byte, 1<<20), 0o644))
	assert.Equal(t, "a\nb\nc\n", ok(t, store, "ls", "-q"))
	assert.Equal(t, "c\na\nb\n", ok(t, store, "ls", "-q", "--sort", "created"))
	assert.Equal(t, "a\nc\nb\n", ok(t, store, "ls", "-q", "--sort", "active"), "a's file is the newest activity")
	assert.Equal(t, "a", strings.Fields(ok(t, store, "ls", "-q", "--sort", "size"))[0])
	r := cli(t, store, "ls", "--sort", "name")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "want id, created, active or size")
}

// ls --json and show --json have the same keys, every one always present: labels, runs, mounted and created came
// and went (a damaged session had no created), and ls said dir where show said store.root.
func TestJSONKeysAlwaysPresent(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "plain")
	require.NoError(t, os.MkdirAll(filepath.Join(store, "sessions", "damaged", "workspace"), 0o755))
	keys := []string{"id", "created", "labels", "cwds", "aliases", "forked_from", "runs", "store", "mounted", "size",
		"last_activity", "damaged"}
	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "ls", "--json")), &rows))
	require.Len(t, rows, 2)
	for _, row := range rows {
		for _, k := range append(keys, "conversations", "agents") {
			assert.Contains(t, row, k, "ls --json of %v", row["id"])
		}
		assert.NotContains(t, row, "dir")
		assert.Equal(t, filepath.Join(store, "sessions", row["id"].(string)), row["store"].(map[string]any)["root"])
	}
	assert.Nil(t, rows[0]["created"], "a damaged session's creation is unknown: null")
	assert.Equal(t, map[string]any{}, rows[1]["labels"])
	assert.Equal(t, []any{}, rows[1]["runs"])
	var shown map[string]any
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "show", "plain", "--json")), &shown))
	for _, k := range append(keys, "container", "conversations") {
		assert.Contains(t, shown, k, "show --json")
	}
}

// TestLsFreshMachineAndStoreMistakes (issue 40, defects 6 and 8): ls on a fresh machine prints an empty table for
// the default store; a --store that is a regular file is said to be no folder; a store that new makes is said on
// stderr (a mistyped --store shows at once); --store's help names $XDG_DATA_HOME.
func TestLsFreshMachineAndStoreMistakes(t *testing.T) {
	home := t.TempDir()
	fresh := []string{"SESSIONFS_STORE=", "HOME=" + home, "XDG_DATA_HOME="}
	r := cliIn(t, "", "", fresh, "ls")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `^ID\s+CREATED`, r.stdout)
	assert.Equal(t, 1, strings.Count(r.stdout, "\n"), "the header alone: %q", r.stdout)
	r = cliIn(t, "", "", fresh, "ls", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.JSONEq(t, "[]", r.stdout)
	assert.NoDirExists(t, filepath.Join(home, ".local", "share", "sessionfs"), "ls makes no store")

	file := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	for _, args := range [][]string{{"--store", file, "ls"}, {"--store", file, "new", "s1"}} {
		r = cli(t, "", args...)
		assert.Equal(t, 125, r.code, "%v", args)
		assert.Contains(t, r.stderr, file+" is not a folder", "%v", args)
		assert.NotContains(t, r.stderr, "mkdir", "%v", args)
	}

	typo := filepath.Join(t.TempDir(), "stroe")
	r = cli(t, "", "--store", typo, "new", "s1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "created a new store at "+typo)
	r = cli(t, "", "--store", typo, "new", "s2")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "created a new store", "said once, when made")

	assert.Contains(t, ok(t, typo, "ls", "--help"), "$XDG_DATA_HOME")
}

// TestLsStatusColumn (issue 40, defect 13): a damaged session's reason is in a STATUS column, not under LABELS;
// show and exec say how to fix it.
func TestLsStatusColumn(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "good", "--label", "team=web")
	ok(t, store, "new", "bad")
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "bad", "session.json"), []byte("{garbage"), 0o644))
	out := ok(t, store, "ls")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	assert.Regexp(t, `^ID\s+CREATED\s+LAST ACTIVE\s+SIZE\s+CONVERSATIONS\s+STATUS\s+LABELS$`, lines[0])
	assert.Regexp(t, `^bad\s.*\sdamaged: invalid character`, lines[1])
	assert.Regexp(t, `^good\s.*\sok\s+team=web$`, lines[2])
	for _, args := range [][]string{{"show", "bad"}, {"exec", "bad", "--", "true"}} {
		r := cli(t, store, args...)
		assert.Equal(t, 125, r.code, "%v", args)
		assert.Contains(t, r.stderr, "session metadata is damaged", "%v", args)
		assert.Contains(t, r.stderr, "sessionfs rm bad", "%v: the fix", args)
		assert.Contains(t, r.stderr, filepath.Join(store, "sessions", "bad", "session.json"), "%v: what to repair", args)
	}
}
