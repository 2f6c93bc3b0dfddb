package e2e

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The daemon keeps a node for each name the kernel caches. Past --max-nodes it asks the kernel to forget the
// names of idle sessions: the daemon's nodes (and their store watches) go, what is in use stays, and everything
// still reads the same.
func TestIdleSessionsAreForgotten(t *testing.T) {
	store := t.TempDir()
	const sessions = 40
	for i := range sessions {
		ok(t, store, "new", fmt.Sprintf("s%02d", i))
	}
	// Binds off: a bound session's folders are mountpoints, which the kernel keeps (and their watches with them);
	// at most --max-binds sessions are.
	m := mount(t, store, "--max-nodes", "100", "--max-binds", "0")

	// Something in use in one session: an open file and a process whose working folder is there.
	busy := filepath.Join(m.session("s00"), "workspace")
	require.NoError(t, os.WriteFile(filepath.Join(busy, "kept.txt"), []byte("kept\n"), 0o644))
	held, err := os.Open(filepath.Join(busy, "kept.txt"))
	require.NoError(t, err)
	defer held.Close()
	sleeper := exec.Command("sleep", "60")
	sleeper.Dir = busy
	require.NoError(t, sleeper.Start())
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })

	before := walkMount(t, m.mnt)
	server := m.serverPID(t) // the watches are the serving process's
	peak := inotifyWatches(t, server)
	require.Greater(t, peak, sessions*4, "the walk is watched: every folder the kernel caches")

	// Idle for longer than the daemon's grace period, the walked sessions are forgotten.
	eventually(t, 20*time.Second, func() bool { return inotifyWatches(t, server) < peak/2 },
		"the daemon kept the watches of %d folders of idle sessions", peak)

	// Nothing changed for a reader, and what was in use still works.
	require.Equal(t, before, walkMount(t, m.mnt))
	buf := make([]byte, 5)
	_, err = held.ReadAt(buf, 0)
	require.NoError(t, err)
	require.Equal(t, "kept\n", string(buf))
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", sleeper.Process.Pid))
	require.NoError(t, err)
	require.Equal(t, busy, cwd)
	require.NoError(t, os.WriteFile(filepath.Join(busy, "after.txt"), []byte("x"), 0o644))
	data, err := os.ReadFile(filepath.Join(store, "sessions", "s00", "workspace", "after.txt"))
	require.NoError(t, err)
	require.Equal(t, "x", string(data))
}

// walkMount lists every file under the mount's sessions with its size and mode.
func walkMount(t *testing.T, mnt string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(mnt, "sessions"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		size := fi.Size()
		if fi.IsDir() {
			size = 0 // a folder's size is the store filesystem's business
		}
		out = append(out, fmt.Sprintf("%s %v %d", strings.TrimPrefix(p, mnt), fi.Mode(), size))
		return nil
	})
	require.NoError(t, err)
	return out
}

// inotifyWatches counts the inotify watches process pid holds.
func inotifyWatches(t *testing.T, pid int) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	require.NoError(t, err)
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err != nil || target != "anon_inode:inotify" {
			continue
		}
		f, err := os.Open(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd.Name()))
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "inotify wd:") {
				n++
			}
		}
		f.Close()
	}
	return n
}
