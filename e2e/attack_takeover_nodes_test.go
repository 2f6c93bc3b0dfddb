package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/mount/inspect"
	"github.com/sessionfs/sessionfs/mount/takeover"
)

// Attacks on what a daemon taking a held mount over restores: the nodes the kernel holds (the node log).

// The test binary doubles as a session's process making a chain of folders (SESSIONFS_E2E_CHAIN).
func init() {
	if n := os.Getenv("SESSIONFS_E2E_CHAIN"); n != "" {
		os.Exit(folderChain(n))
	}
}

// folderChain makes, in HELPER_DIR, a chain of n folders each moved into one made after it (mkdir and mv: d0 in
// d1 in d2 ...), so that each folder's node id is below its parent's, and says "made".
func folderChain(n string) int {
	count, err := strconv.Atoi(n)
	if err == nil {
		err = os.Chdir(os.Getenv("HELPER_DIR"))
	}
	if err == nil {
		err = os.Mkdir("d0", 0o755)
	}
	for k := 1; err == nil && k < count; k++ {
		if err = os.Mkdir(fmt.Sprintf("d%d", k), 0o755); err == nil {
			err = os.Rename(fmt.Sprintf("d%d", k-1), fmt.Sprintf("d%d/d%d", k, k-1))
		}
	}
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("made")
	return 0
}

// TestAttackFolderChainTakeover: uid 65534 on an --allow-other root mount makes 16,000 folders in its session,
// each moved into one made after it (mkdir and mv, 5 s), and the daemon is killed. The daemon taking over must
// serve within the holder's bound, and another session go on. A node is restored by a lookup of its store path,
// which costs a step for each folder above it: the chain's nodes cost 16,000²/2 steps. Restoring every node the
// kernel held before serving took past the holder's bound (10 s), so the holder ended the connection, and every
// session's processes got "transport endpoint is not connected" (any kill or upgrade, for as long as the kernel
// held the chain). Now the daemon restores for at most half a second and the rest when the kernel first names
// them: the chain's nodes cost the attacker, when used.
func TestAttackFolderChainTakeover(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a confined mount, its holder, and an attacker of another uid")
	const folders = 16000
	store := t.TempDir()
	attackerSessions(t, store, "a")
	ok(t, store, "new", "b")
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "b", "workspace", "f"), []byte("b's"), 0o644))
	m := attackedHeldMount(t, store)

	start := time.Now()
	a := startAttacker(t, exeForOthers(t), "SESSIONFS_E2E_CHAIN="+strconv.Itoa(folders),
		"HELPER_DIR="+filepath.Join(m.session("a"), "workspace"))
	require.Equal(t, "made", a.line(t))
	t.Logf("uid 65534 made a chain of %d folders in %s", folders, time.Since(start).Round(time.Millisecond))

	held, err := takeover.HeldBy(m.mnt)
	require.NoError(t, err)
	t.Logf("the kernel holds %d nodes, as the node log says", held.Nodes)
	pid, err := inspect.ServingPID(m.mnt)
	require.NoError(t, err)
	took := strings.Count(m.log.String(), "took the connection over")
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	if pid == m.cmd.Process.Pid {
		state, err := m.cmd.Process.Wait()
		require.NoError(t, err)
		m.cmd.ProcessState = state
	}
	// The holder says how each takeover ended: served, or the connection ended past its bound.
	eventually(t, time.Minute, func() bool {
		return strings.Count(m.log.String(), "took the connection over") > took || strings.Contains(m.log.String(), "the connection is ended")
	}, "the holder says nothing of the takeover: %s", m.log)
	b, readErr := os.ReadFile(filepath.Join(m.session("b"), "workspace", "f"))
	line := regexp.MustCompile(`sessionfs: daemon \d+ (took the connection over|did not serve)[^\n]*`).FindAllString(m.log.String(), -1)
	t.Logf("after the kill: %q; another session's file: %q, %v", line, b, readErr)
	require.NotContains(t, m.log.String(), "the connection is ended")
	assert.NoError(t, readErr, "another session's file after the takeover")
	restores := takeoverRestores(m.log.String())
	require.Len(t, restores, 1)
	n, later := restores[0].before, restores[0].later
	assert.GreaterOrEqual(t, n+later, held.Nodes*9/10, "the nodes the kernel held, restored or left for when used")

	// The chain's nodes left for later are restored when used: 300 folders down past those restored before.
	down := min(n+300, folders-1)
	dir, err := os.Open(filepath.Join(m.session("a"), "workspace", fmt.Sprintf("d%d", folders-1)))
	require.NoError(t, err)
	for k := folders - 2; k >= folders-down; k-- {
		next, err := openDirAt(dir, fmt.Sprintf("d%d", k))
		dir.Close()
		require.NoError(t, err, "folder d%d of the chain", k)
		dir = next
	}
	names, err := dir.Readdirnames(-1)
	dir.Close()
	require.NoError(t, err)
	assert.Equal(t, []string{fmt.Sprintf("d%d", folders-down-1)}, names)
	t.Logf("restored before serving: %d, left for when used: %d; %d folders down the chain read after", n, later, down)
}

// openDirAt opens folder name in dir.
func openDirAt(dir *os.File, name string) (*os.File, error) {
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}
