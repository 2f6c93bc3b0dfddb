package layout

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// walkTree lays out a tree with every kind of entry a session may make: files, folders, a link to a folder
// inside and one outside, a FIFO, and a folder of more names than one getdents returns, with folders among them
// (the walk's levels share one buffer: a level's listing must be copied out before the walk goes down).
func walkTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o600))
	for _, d := range []string{"a/b/c", "big", ".claude"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "a/b/c/file"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, ".claude/settings.json"), []byte("{}"), 0o644))
	require.NoError(t, os.Symlink("a/b", filepath.Join(root, "inside")))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "out")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "a/fifo"), 0o644))
	for i := range 2000 { // ~60 KiB of names: several getdents of the walk's 16 KiB buffer
		name := filepath.Join(root, "big", fmt.Sprintf("entry-with-a-long-name-%04d", i))
		if i%100 == 0 {
			require.NoError(t, os.MkdirAll(filepath.Join(name, "inner"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(name, "inner", "f"), nil, 0o644))
			continue
		}
		require.NoError(t, os.WriteFile(name, nil, 0o644))
	}
	return root
}

func TestWalkNamesGivesWhatWalkGives(t *testing.T) {
	t.Run("types listed", func(t *testing.T) { walkNamesAsWalk(t) })
	t.Run("types not listed", func(t *testing.T) {
		listingTypes = false // as xfs without ftype: every type is asked with lstat
		defer func() { listingTypes = true }()
		walkNamesAsWalk(t)
	})
}

func walkNamesAsWalk(t *testing.T) {
	d, err := OpenDir(walkTree(t))
	require.NoError(t, err)
	defer d.Close()

	byStat := map[string]uint8{}
	require.NoError(t, d.Walk(func(rel string, st *unix.Stat_t) error {
		byStat[rel] = direntType(st.Mode)
		return nil
	}))
	byName := map[string]uint8{}
	require.NoError(t, d.WalkNames(func(rel string, typ uint8) error {
		_, twice := byName[rel]
		assert.False(t, twice, "%s given twice", rel)
		byName[rel] = typ
		return nil
	}))

	assert.Equal(t, byStat, byName)
	// a, a/b, a/b/c and its file, a/fifo, .claude and its settings, the two links, big: 10; big's 2,000 entries;
	// the inner folders of 20 of them, and their files.
	assert.Len(t, byName, 10+2000+20+20)
	assert.Equal(t, uint8(unix.DT_DIR), byName["big/entry-with-a-long-name-1900/inner"])
	assert.Equal(t, uint8(unix.DT_REG), byName["big/entry-with-a-long-name-1900/inner/f"])
	assert.Equal(t, uint8(unix.DT_LNK), byName["out"])
	assert.Equal(t, uint8(unix.DT_LNK), byName["inside"])
	assert.Equal(t, uint8(unix.DT_FIFO), byName["a/fifo"])
	for rel := range byName {
		assert.False(t, strings.HasPrefix(rel, "out/") || strings.HasPrefix(rel, "inside/"), "entered a link: %s", rel)
	}
}

func TestWalkNamesSkipsAndStops(t *testing.T) {
	d, err := OpenDir(walkTree(t))
	require.NoError(t, err)
	defer d.Close()

	var seen []string
	require.NoError(t, d.WalkNames(func(rel string, typ uint8) error {
		seen = append(seen, rel)
		if rel == "big" {
			return SkipDir
		}
		return nil
	}))
	assert.Contains(t, seen, "big")
	assert.Contains(t, seen, "a/b/c/file")
	for _, rel := range seen {
		assert.False(t, strings.HasPrefix(rel, "big/"), "walked into a skipped folder: %s", rel)
	}

	stop := fmt.Errorf("stop")
	n := 0
	err = d.WalkNames(func(rel string, typ uint8) error {
		if n++; n == 5 {
			return stop
		}
		return nil
	})
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, 5, n, "the walk went on after its function failed")
}

func TestWalkNamesRefusesTooDeep(t *testing.T) {
	root := t.TempDir()
	// Built by descriptor: a path this deep is longer than PATH_MAX.
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	require.NoError(t, err)
	for range MaxWalkDepth + 2 {
		require.NoError(t, unix.Mkdirat(fd, "d", 0o755))
		sub, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		require.NoError(t, err)
		unix.Close(fd)
		fd = sub
	}
	unix.Close(fd)
	d, err := OpenDir(root)
	require.NoError(t, err)
	defer d.Close()
	err = d.WalkNames(func(string, uint8) error { return nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nested more than")
}

func TestAppendDirentsRefusesABadRecord(t *testing.T) {
	rec := make([]byte, 24)
	rec[16] = 200 // a record longer than what was read
	_, err := appendDirents(nil, rec)
	assert.ErrorIs(t, err, unix.EIO)
	_, err = appendDirents(nil, rec[:10])
	assert.ErrorIs(t, err, unix.EIO)
}
