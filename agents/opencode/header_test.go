package opencode

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
)

// The header is read in place: zeros, a header saying another size, a log that is not SQLite's are refused
// before a byte is copied; a database is copied as its header says, its holes left holes.
func TestSnapshotReadsTheHeaderInPlace(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "opencode.db")
	db, err := sql.Open("sqlite", "file:"+p)
	require.NoError(t, err)
	_, err = db.Exec(`CREATE TABLE session (id TEXT PRIMARY KEY); INSERT INTO session VALUES ('ses_1')`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	good, err := os.ReadFile(p)
	require.NoError(t, err)

	d, err := layout.OpenDir(dir)
	require.NoError(t, err)
	defer d.Close()
	snap := func() error {
		tmp := t.TempDir()
		return snapshot(d, "opencode.db", tmp, maxCopy)
	}
	require.NoError(t, snap(), "a database as SQLite wrote it")

	// Zeros: a sparse file of 1 GiB, and a log of the same.
	require.NoError(t, os.Truncate(p, 0))
	require.NoError(t, os.Truncate(p, 1<<30))
	assert.ErrorIs(t, snap(), errHeader)
	require.NoError(t, os.WriteFile(p, good, 0o600))
	require.NoError(t, os.WriteFile(p+"-wal", nil, 0o600))
	require.NoError(t, os.Truncate(p+"-wal", 1<<30))
	assert.ErrorIs(t, snap(), errHeader, "a log of zeros")
	require.NoError(t, os.Remove(p+"-wal"))

	// A header that says other than the file's size: the file made 1 GiB, sparse, past its pages.
	require.NoError(t, os.Truncate(p, 1<<30))
	assert.ErrorIs(t, snap(), errHeader)

	// A header that says 1 GiB of pages, of a file of 1 GiB but for a few pages, holes: copied as holes.
	h := append([]byte(nil), good...)
	pages := uint32((1 << 30) / 4096)
	h[28], h[29], h[30], h[31] = byte(pages>>24), byte(pages>>16), byte(pages>>8), byte(pages)
	require.NoError(t, os.WriteFile(p, h, 0o600))
	require.NoError(t, os.Truncate(p, 1<<30))
	tmp := t.TempDir()
	require.NoError(t, snapshot(d, "opencode.db", tmp, maxCopy))
	var st unix.Stat_t
	require.NoError(t, unix.Stat(filepath.Join(tmp, "opencode.db"), &st))
	assert.Equal(t, int64(1<<30), st.Size)
	assert.Less(t, st.Blocks*512, int64(1<<20), "the copy's holes stay holes")
	assert.Error(t, snapshot(d, "opencode.db", t.TempDir(), 1<<20), "past the bound")
}
