package e2e

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestMountSessionsFolderRefusesFiles (issue 50, 5): a file, a FIFO or a link made in <mnt>/sessions/ is refused
// with EPERM ("Operation not permitted"): sessions/ holds sessions, each a folder. Before, touch said "Read-only
// file system" on a read-write mount.
func TestMountSessionsFolderRefusesFiles(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	sessions := filepath.Join(m.mnt, "sessions")
	err := os.WriteFile(filepath.Join(sessions, "notes.txt"), []byte("x"), 0o644)
	assert.ErrorIs(t, err, syscall.EPERM, "touch sessions/notes.txt")
	assert.ErrorIs(t, syscall.Mkfifo(filepath.Join(sessions, "fifo"), 0o644), syscall.EPERM, "mkfifo sessions/fifo")
	assert.ErrorIs(t, os.Symlink("s1", filepath.Join(sessions, "link")), syscall.EPERM, "ln -s s1 sessions/link")
	_, err = os.Stat(filepath.Join(store, "sessions", "notes.txt"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing reached the store")
}
