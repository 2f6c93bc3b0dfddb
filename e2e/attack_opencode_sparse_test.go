package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAttackOpencodeSparseDatabase: a session's processes make its opencode database and its log two sparse files
// of 1 GiB (truncate -s: no disk spent, nothing but zeros). sessionfs ls, which counts every session's opencode
// conversations, answers within twice its quiet time (plus 300 ms): the database's header is read in place and
// refuses the file before anything is copied. Before, every reader copied the 2 GiB of zeros into its temporary
// folder before the schema check refused them (ls 0.2 s -> 7-42 s; a tmpfs TMPDIR filled).
func TestAttackOpencodeSparseDatabase(t *testing.T) {
	store := t.TempDir()
	for _, id := range []string{"s1", "s2", "s3"} {
		ok(t, store, "new", id)
	}
	ls := func(what string) time.Duration {
		var ds []time.Duration
		for range 3 {
			r, took := cliBounded(t, store, nil, "ls")
			require.Equal(t, 0, r.code, "%s: %s", what, r.stderr)
			require.Contains(t, r.stdout, "s2", what)
			ds = append(ds, took)
		}
		slices.Sort(ds)
		t.Logf("sessionfs ls %s: %v (median of %v)", what, ds[1].Round(time.Millisecond), ds)
		return ds[1]
	}
	quiet := ls("quiet")

	db := opencodeDBOf(store, "s1")
	require.NoError(t, os.MkdirAll(filepath.Dir(db), 0o755))
	for _, p := range []string{db, db + "-wal"} {
		f, err := os.Create(p)
		require.NoError(t, err)
		require.NoError(t, f.Truncate(1<<30))
		require.NoError(t, f.Close())
	}
	giveSession(t, store, "s1")
	attacked := ls("with s1's sparse database")
	t.Logf("sessionfs ls: %v quiet, %v with the sparse database (%.1fx)", quiet.Round(time.Millisecond),
		attacked.Round(time.Millisecond), float64(attacked)/float64(quiet))
	// 2x, plus 300 ms for a stall of a loaded machine; before the fix ls took 7-42 s.
	assert.LessOrEqual(t, attacked, 2*quiet+300*time.Millisecond, "sessionfs ls within 2x its quiet time")
	r, _ := cliBounded(t, store, nil, "ls")
	assert.Contains(t, r.stderr, "opencode", "ls says why s1's opencode conversations are left out")
	t.Logf("ls warns: %s", r.stderr)
}
