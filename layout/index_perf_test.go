package layout

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A rescan tells IndexProgress of each stale session, once, counting up to how many were stale; a listing that
// finds every record fresh tells it nothing.
func TestIndexProgressCountsRescans(t *testing.T) {
	withTestIndexer(t)
	s := newStore(t)
	for _, id := range []string{"a", "b", "c"} {
		_, err := s.Create(id, CreateOptions{})
		require.NoError(t, err)
	}
	var mu sync.Mutex
	var calls [][2]int
	s.IndexProgress = func(done, total int) {
		mu.Lock()
		calls = append(calls, [2]int{done, total})
		mu.Unlock()
	}
	indexed(t, s) // no index yet: all three rescanned
	assert.Equal(t, [][2]int{{1, 3}, {2, 3}, {3, 3}}, calls)
	settle(t, s)

	calls = nil
	indexed(t, s)
	assert.Empty(t, calls, "nothing stale")

	// A session copied in behind the index (as cp -a, a restored backup or a sync makes one).
	require.NoError(t, os.MkdirAll(filepath.Join(s.SessionsDir(), "d", ProjectsDir, CanonicalProject), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(s.SessionsDir(), "d", MetaFile), []byte(`{"id":"d"}`), 0o644))
	calls = nil
	got := indexed(t, s)
	assert.Len(t, got, 4)
	assert.Equal(t, [][2]int{{1, 1}}, calls)
}

func TestParallelIOCallsEachOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 1000} {
		seen := make([]int32, n)
		var mu sync.Mutex
		parallelIO(n, func(i int) {
			mu.Lock()
			seen[i]++
			mu.Unlock()
		})
		for i, c := range seen {
			require.EqualValues(t, 1, c, "n=%d i=%d", n, i)
		}
	}
}

// Lstat of a name in the folder itself (no descriptor opened) answers as that of a deeper name does: never
// following a symlink, and a missing name is a PathError of ENOENT.
func TestLstatNameInFolder(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "f"), []byte("x"), 0o644))
	require.NoError(t, os.Symlink("/etc", filepath.Join(dir, "link")))
	d, err := OpenDir(dir)
	require.NoError(t, err)
	defer d.Close()

	st, err := d.Lstat("link")
	require.NoError(t, err)
	assert.EqualValues(t, unix.S_IFLNK, st.Mode&unix.S_IFMT, "not followed")
	st, err = d.Lstat("sub")
	require.NoError(t, err)
	assert.EqualValues(t, unix.S_IFDIR, st.Mode&unix.S_IFMT)
	st, err = d.Lstat("sub/f")
	require.NoError(t, err)
	assert.EqualValues(t, 1, st.Size)
	_, err = d.Lstat("missing")
	var pe *os.PathError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "missing", pe.Path)
	assert.ErrorIs(t, err, syscall.ENOENT)
	_, err = d.Lstat("..")
	assert.Error(t, err, "not beneath")
	st, err = d.Lstat(".")
	require.NoError(t, err)
	assert.EqualValues(t, unix.S_IFDIR, st.Mode&unix.S_IFMT)
}

// UsageIn counts what du does in folders that take several getdents buffers, at several levels sharing one.
func TestUsageInManyEntries(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("n", 120)
	for _, sub := range []string{"", "a", "a/b", "c"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, sub), 0o755))
		for i := range 400 { // 400 names of 120+ bytes: about 3 buffers of 16 KiB
			name := filepath.Join(dir, sub, long+string(rune('a'+i%26))+strings.Repeat("x", i/26))
			require.NoError(t, os.WriteFile(name, []byte{byte(i)}, 0o644))
		}
	}
	var want int64
	require.NoError(t, filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		require.NoError(t, err)
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(p, &st))
		want += st.Blocks * 512
		return nil
	}))
	size, last := Usage(dir)
	assert.Equal(t, want, size)
	assert.False(t, last.IsZero())
}

// TestFoldersNamesOnlyFolders: Folders gives the folders of a folder, not its files, links (to a folder too),
// FIFOs, nor . and ..; every one of them when the names need many reads of the folder.
func TestFoldersNamesOnlyFolders(t *testing.T) {
	root := t.TempDir()
	want := []string{"a", "b.c", strings.Repeat("d", 200)}
	for i := range 2000 { // 2000 names of 100 bytes: several 64 KiB reads
		want = append(want, fmt.Sprintf("%s%04d", strings.Repeat("x", 96), i))
	}
	for _, name := range want {
		require.NoError(t, os.Mkdir(filepath.Join(root, name), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "file"), nil, 0o644))
	require.NoError(t, os.Symlink("a", filepath.Join(root, "link-to-a")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	d, err := OpenDir(root)
	require.NoError(t, err)
	defer d.Close()
	got, err := d.Folders()
	require.NoError(t, err)
	assert.ElementsMatch(t, want, got)
}

// TestFoldersUpToReadsNoFurther: FoldersUpTo gives every folder of a folder within its bound, and says so; past
// it, all is false, whatever the kind of the names (files count as much as folders).
func TestFoldersUpToReadsNoFurther(t *testing.T) {
	root := t.TempDir()
	for i := range 3 {
		require.NoError(t, os.Mkdir(filepath.Join(root, fmt.Sprintf("d%d", i)), 0o755))
	}
	d, err := OpenDir(root)
	require.NoError(t, err)
	defer d.Close()
	got, all, err := d.FoldersUpTo(3)
	require.NoError(t, err)
	assert.True(t, all)
	assert.ElementsMatch(t, []string{"d0", "d1", "d2"}, got)
	for i := range 100 {
		require.NoError(t, os.WriteFile(filepath.Join(root, fmt.Sprintf("f%03d", i)), nil, 0o644))
	}
	got, all, err = d.FoldersUpTo(10)
	require.NoError(t, err)
	assert.False(t, all, "110 names, 10 read")
	assert.LessOrEqual(t, len(got), 3)
}

// Usage reads folders without updating their access times: a listing of sessions just copied in (each folder's
// access time older than its change) writes no inode back. A folder listed by os.ReadDir on the same filesystem
// does have its access time updated, or the test could not tell.
func TestUsageLeavesAccessTimes(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "control"), 0o755))
	old := time.Now().Add(-48 * time.Hour)
	atime := func(rel string) time.Time {
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(filepath.Join(dir, rel), &st))
		return time.Unix(st.Atim.Unix())
	}
	for _, rel := range []string{".", "a", "a/b", "control"} {
		require.NoError(t, os.Chtimes(filepath.Join(dir, rel), old, time.Time{})) // atime only
	}
	_, err := os.ReadDir(filepath.Join(dir, "control"))
	require.NoError(t, err)
	if atime("control").Equal(atime(".")) {
		t.Skipf("%s updates no access time on a read (mounted noatime): nothing to tell apart", dir)
	}
	Usage(dir)
	for _, rel := range []string{".", "a", "a/b"} {
		assert.WithinDuration(t, old, atime(rel), time.Second, rel)
	}
}
