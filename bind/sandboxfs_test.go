package bind

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The test binary doubles as the init of a new PID namespace that mounts its /proc (TestProcesses).
func init() {
	if place := os.Getenv("SESSIONFS_BIND_TEST_PROC"); place != "" {
		os.Exit(listOwnProcesses(place))
	}
}

// listOwnProcesses mounts Processes at place and prints the processes it lists.
func listOwnProcesses(place string) int {
	fd, err := unix.Open(place, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	if _, err := Processes(fd); err != nil {
		fmt.Println(err)
		return 1
	}
	ents, err := os.ReadDir(place)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	var pids []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, e.Name())
		}
	}
	fmt.Println(strings.Join(pids, " "))
	return 0
}

// TestProcesses: the procfs mounted is nosuid, nodev and noexec, and shows the caller's PID namespace: the host's
// processes for the test, the init alone for the init of a new one.
func TestProcesses(t *testing.T) {
	needRoot(t)
	place := t.TempDir()
	m, err := Processes(openPath(t, place))
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Detach() })
	var fs unix.Statfs_t
	require.NoError(t, unix.Statfs(place, &fs))
	assert.Equal(t, int64(unix.PROC_SUPER_MAGIC), int64(fs.Type))
	assert.Subset(t, strings.Split(mountOptions(t, place), ","), []string{"nosuid", "nodev", "noexec"})
	self, err := os.Readlink(filepath.Join(place, "self"))
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(os.Getpid()), self)

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SESSIONFS_BIND_TEST_PROC="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "1\n", string(out), "a new PID namespace's init sees itself alone")
}

// TestSharedMemory: an empty tmpfs of its own, over what the place held, open to all, nosuid, nodev and noexec,
// and no bigger than asked.
func TestSharedMemory(t *testing.T) {
	needRoot(t)
	place := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(place, "host"), []byte("the host's"), 0o600))
	m, err := SharedMemory(openPath(t, place), "1m")
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Detach() })
	var fs unix.Statfs_t
	require.NoError(t, unix.Statfs(place, &fs))
	assert.Equal(t, int64(unix.TMPFS_MAGIC), int64(fs.Type))
	assert.Equal(t, uint64(1<<20), fs.Blocks*uint64(fs.Bsize), "size")
	assert.Subset(t, strings.Split(mountOptions(t, place), ","), []string{"nosuid", "nodev", "noexec"})
	st, err := os.Stat(place)
	require.NoError(t, err)
	assert.Equal(t, os.ModeDir|os.ModeSticky|0o777, st.Mode(), "open to all, as /dev/shm")
	ents, err := os.ReadDir(place)
	require.NoError(t, err)
	assert.Empty(t, ents, "what the place held is out of sight")

	script := filepath.Join(place, "x")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho ran\n"), 0o755))
	assert.ErrorIs(t, exec.Command(script).Run(), unix.EACCES, "noexec")
	assert.ErrorIs(t, os.WriteFile(filepath.Join(place, "big"), make([]byte, 2<<20), 0o644), unix.ENOSPC)

	pct := t.TempDir()
	m2, err := SharedMemory(openPath(t, pct), "25%")
	require.NoError(t, err, "a share of the memory")
	require.NoError(t, m2.Detach())
	_, err = SharedMemory(openPath(t, t.TempDir()), "lots")
	assert.ErrorContains(t, err, "size=lots")
}
