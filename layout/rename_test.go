package layout

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// renameNoReplace stands in for RENAME_NOREPLACE where a filesystem refuses rename flags: it moves files, links
// and folders, and never replaces a name that is taken.
func TestRenameNoReplaceByHand(t *testing.T) {
	root := t.TempDir()
	d, err := OpenDir(root)
	require.NoError(t, err)
	defer d.Close()
	write := func(name, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(text), 0o644))
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, name))
		require.NoError(t, err)
		return string(b)
	}
	mv := func(from, to string) error { return renameNoReplace(d.Fd(), from, d.Fd(), to) }

	write("a", "A")
	require.NoError(t, mv("a", "b"))
	assert.Equal(t, "A", read("b"))
	assert.NoFileExists(t, filepath.Join(root, "a"))

	write("c", "C")
	assert.ErrorIs(t, mv("c", "b"), unix.EEXIST)
	assert.Equal(t, "A", read("b"), "a taken name is never replaced")
	assert.Equal(t, "C", read("c"), "and the source stays")

	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(root, "link")))
	require.NoError(t, mv("link", "link2"))
	target, err := os.Readlink(filepath.Join(root, "link2"))
	require.NoError(t, err)
	assert.Equal(t, "/etc/passwd", target, "a link moves as a link")

	write("dir/f", "F")
	require.NoError(t, mv("dir", "dir2"))
	assert.Equal(t, "F", read("dir2/f"))
	assert.NoDirExists(t, filepath.Join(root, "dir"))

	write("dir3/g", "G")
	require.NoError(t, os.Mkdir(filepath.Join(root, "empty"), 0o755))
	assert.ErrorIs(t, mv("dir3", "empty"), unix.EEXIST, "not even an empty folder is replaced")
	assert.ErrorIs(t, mv("dir3", "dir2"), unix.EEXIST)
	assert.Equal(t, "G", read("dir3/g"))
	assert.Equal(t, "F", read("dir2/f"))
}
