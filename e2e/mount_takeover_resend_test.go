package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// faultBuild builds the fault-injection daemon (mount/takeover/fault_on.go) from this tree's source.
func faultBuild(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "sessionfs-fault")
	build := exec.Command("go", "build", "-tags", "faultinject", "-o", exe, "../cmd/sessionfs")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build the fault-injection daemon: %s", out)
	return exe
}

// TestMountTakeoverResentRenames (issue 42): a daemon killed after it made a rename and before it answered (the test
// build dies there: a new name starting .sessionfs-die-after-) leaves the request to the kernel, which resends it
// to the daemon that takes over. The rename is made once:
//   - RENAME_EXCHANGE: the two names are swapped once. Before, the resent exchange was made again and swapped them
//     back, and the caller was told it worked.
//   - RENAME_NOREPLACE, and a plain rename over an existing name: the source is gone and the target holds what the
//     source held.
func TestMountTakeoverResentRenames(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a confined mount and its helper")
	exe := faultBuild(t)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mountWith(t, exe, store)
	helper := helperPID(t, m.cmd.Process.Pid)
	t.Cleanup(func() { endTakeoverMount(t, m, helper) })
	dir := filepath.Join(m.session("s1"), ".claude")
	inStore := filepath.Join(store, "sessions", "s1", ".claude")
	takeovers := 0
	tookOver := func(what string) {
		t.Helper()
		if takeovers == 0 { // the test's child, dead: reaped here (its output stays open in the helper)
			state, err := m.cmd.Process.Wait()
			require.NoError(t, err)
			m.cmd.ProcessState = state
		}
		takeovers++
		eventually(t, 10*time.Second, func() bool { return strings.Count(m.log.String(), "took the connection over") == takeovers },
			"%s: the daemon died and one took over: %s", what, m.log)
	}
	write := func(name, content string) {
		t.Helper()
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
	}
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(inStore, name))
		require.NoError(t, err)
		return string(b)
	}
	rename := func(from, to string, flags uint) error {
		return unix.Renameat2(unix.AT_FDCWD, filepath.Join(dir, from), unix.AT_FDCWD, filepath.Join(dir, to), flags)
	}

	write("a", "A\n")
	write(".sessionfs-die-after-exchange", "B\n")
	require.NoError(t, rename("a", ".sessionfs-die-after-exchange", unix.RENAME_EXCHANGE), "the exchange: %s", m.log)
	tookOver("exchange")
	t.Logf("after the resent exchange: a holds %q, .sessionfs-die-after-exchange holds %q", read("a"), read(".sessionfs-die-after-exchange"))
	assert.Equal(t, "B\n", read("a"), "swapped once, in the store")
	assert.Equal(t, "A\n", read(".sessionfs-die-after-exchange"), "swapped once, in the store")
	b, err := os.ReadFile(filepath.Join(dir, "a"))
	require.NoError(t, err)
	assert.Equal(t, "B\n", string(b), "swapped once, through the mount")

	write("c", "C\n")
	require.NoError(t, rename("c", ".sessionfs-die-after-noreplace", unix.RENAME_NOREPLACE), "the rename without replace: %s", m.log)
	tookOver("noreplace")
	assert.NoFileExists(t, filepath.Join(inStore, "c"))
	assert.Equal(t, "C\n", read(".sessionfs-die-after-noreplace"))

	write("d", "D\n")
	write(".sessionfs-die-after-over", "old\n")
	require.NoError(t, rename("d", ".sessionfs-die-after-over", 0), "the rename over a file: %s", m.log)
	tookOver("rename over")
	assert.NoFileExists(t, filepath.Join(inStore, "d"))
	assert.Equal(t, "D\n", read(".sessionfs-die-after-over"))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	t.Logf("the folder through the mount after %d takeovers: %v", takeovers, names)
}
