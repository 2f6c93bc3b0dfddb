package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/mount/takeover"
)

// TestMountTakeoverNodeLogCompacted (issue 42): the node log (every node id handed to the kernel, which a daemon
// taking over restores) is compacted as it fills, never full. Files are held open, some before and some after
// lookups and forgets churned through many times the log's capacity (the fault-injection build's log is two
// halves of 64 KiB: SESSIONFS_FAULT_NODELOG_HALF), and the serving daemon is killed, twice: every held file still
// reads and writes, and the log was compacted by both daemons. Before, a full log dropped the records of every file
// looked up after (a production log fills after about 64 MiB of records): a kill left those files to EIO.
func TestMountTakeoverNodeLogCompacted(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a confined mount and its helper")
	exe := faultBuild(t)
	const half = 64 << 10
	t.Setenv("SESSIONFS_FAULT_NODELOG_HALF", strconv.Itoa(half)) // the daemon's, its holder's and those it starts
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mountWith(t, exe, store)
	daemon := m.cmd.Process.Pid
	helper := helperPID(t, daemon)
	t.Cleanup(func() { endTakeoverMount(t, m, helper) })
	dir := filepath.Join(m.session("s1"), ".claude")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "held"), 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "churn"), 0o755))

	var held []*os.File
	hold := func(n int) {
		t.Helper()
		for range n {
			f, err := os.OpenFile(filepath.Join(dir, "held", fmt.Sprintf("f%d", len(held))), os.O_CREATE|os.O_RDWR, 0o600)
			require.NoError(t, err)
			t.Cleanup(func() { f.Close() })
			_, err = f.WriteString(f.Name() + "\n")
			require.NoError(t, err)
			held = append(held, f)
		}
	}
	// churn makes and removes n files: each a node id handed to the kernel (a create) and forgotten (the unlink),
	// about 100 bytes of records.
	churned := 0
	churn := func(n int) {
		t.Helper()
		for range n {
			name := filepath.Join(dir, "churn", fmt.Sprintf("c%d", churned))
			f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			require.NoError(t, err)
			require.NoError(t, f.Close())
			require.NoError(t, os.Remove(name))
			churned++
		}
	}
	check := func(round int) {
		t.Helper()
		for i, f := range held {
			_, err := f.WriteAt([]byte("ok\n"), int64(len(f.Name())+1))
			require.NoError(t, err, "round %d: held file %d written after the kill", round, i)
			b := make([]byte, len(f.Name())+4)
			n, err := f.ReadAt(b, 0)
			require.NoError(t, err, "round %d: held file %d read after the kill", round, i)
			assert.Equal(t, f.Name()+"\nok\n", string(b[:n]), "round %d: held file %d", round, i)
			var st unix.Stat_t
			require.NoError(t, unix.Fstat(int(f.Fd()), &st))
		}
	}
	compactions := 0
	for round := range 2 {
		hold(50)
		churn(10000) // about 1 MB of records: 15 times the log's two halves
		hold(50)     // looked up after the churn: a full log had lost them
		st, err := takeover.HeldBy(m.mnt)
		require.NoError(t, err)
		t.Logf("round %d: %d files made and removed so far, the node log compacted %d times, %d nodes in it", round, churned, st.Compactions, st.Nodes)
		assert.Greater(t, st.Compactions, compactions+10, "round %d: compacted as it filled", round)
		compactions = st.Compactions

		pid := m.serverPID(t)
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
		if pid == daemon {
			state, err := m.cmd.Process.Wait()
			require.NoError(t, err)
			m.cmd.ProcessState = state
		}
		eventually(t, 20*time.Second, func() bool { return strings.Count(m.log.String(), "took the connection over") == round+1 },
			"round %d: a daemon takes over: %s", round, m.log)
		all := takeoverRestores(m.log.String())
		n := all[len(all)-1].nodes()
		assert.GreaterOrEqual(t, n, len(held), "round %d: the held files restored", round)
		check(round)
	}
	assert.NotContains(t, m.log.String(), "node log is full")
	assert.NotContains(t, m.log.String(), "not compacted")
}
