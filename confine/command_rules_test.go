package confine

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestOwnTerminals: only a devpts instance that holds no terminal yet (the run's own, just mounted) is granted as
// the command's /dev/pts; one that lists a terminal (the host's), or a folder that is no devpts, is not.
func TestOwnTerminals(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("requirement missing under CI: root (to mount a devpts instance)")
		}
		t.Skip("skipped: mounting a devpts instance needs root")
	}
	place := t.TempDir()
	require.NoError(t, unix.Mount("devpts", place, "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"))
	t.Cleanup(func() { _ = unix.Unmount(place, unix.MNT_DETACH) })
	own := func(p string) bool {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		defer unix.Close(fd)
		return ownTerminals(fd)
	}
	assert.True(t, own(place), "a fresh instance")
	assert.False(t, own(t.TempDir()), "no devpts")

	master, err := os.OpenFile(filepath.Join(place, "ptmx"), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	defer master.Close()
	n, err := unix.IoctlGetUint32(int(master.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(place, strconv.Itoa(int(n))))
	assert.False(t, own(place), "an instance with a terminal in it is someone's already")
}
