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

	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/internal/selfexec"
	"github.com/sessionfs/sessionfs/mount/inspect"
)

// faultPrefix is nodes.FaultPrefix: the names the fault-injection build answers in sessions/.
const faultPrefix = ".sessionfs-fault-"

// servingPID is the pid of the process serving the mount at mnt: the one holding its FUSE connection.
func servingPID(t *testing.T, mnt string) int {
	t.Helper()
	pid, err := inspect.ServingPID(mnt)
	require.NoError(t, err, "the serving process of %s", mnt)
	return pid
}

// serverPID is the process that serves the mount's FUSE requests (the daemon itself for every mount this harness
// starts: it runs without a terminal, so it is not relayed).
func (m *mounted) serverPID(t *testing.T) int {
	t.Helper()
	return servingPID(t, m.mnt)
}

// killServing kills the process serving m (the test's own daemon is reaped here: its output stays open in the
// helper, so not cmd.Wait) and waits for another to take the connection over.
func (m *mounted) killServing(t *testing.T) {
	t.Helper()
	pid := m.serverPID(t)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	if pid == m.cmd.Process.Pid {
		state, err := m.cmd.Process.Wait()
		require.NoError(t, err)
		m.cmd.ProcessState = state
	}
	eventually(t, 20*time.Second, func() bool {
		next, err := inspect.ServingPID(m.mnt)
		return err == nil && next != pid
	}, "a daemon takes over from %d: %s", pid, m.log)
}

// helperPID is the privileged helper of the daemon pid: its child.
func helperPID(t *testing.T, pid int) int {
	t.Helper()
	// Each thread lists the children it started.
	files, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	require.NoError(t, err)
	var children []string
	for _, f := range files {
		b, _ := os.ReadFile(f)
		children = append(children, strings.Fields(string(b))...)
	}
	for _, f := range children {
		child, err := strconv.Atoi(f)
		require.NoError(t, err)
		if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", child)); strings.Contains(string(cmdline), selfexec.Helper) {
			return child
		}
	}
	t.Fatalf("the daemon %d has no helper", pid)
	return 0
}

// procStatus is /proc/<pid>/status as a map.
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	return statusFields(b)
}

// threadStatus reads /proc/<pid>/task/*/status: capabilities and seccomp are each thread's own.
func threadStatus(t *testing.T, pid int) []map[string]string {
	t.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	require.NoError(t, err)
	var out []map[string]string
	for _, task := range tasks {
		if b, err := os.ReadFile(task); err == nil { // a thread may have ended meanwhile
			out = append(out, statusFields(b))
		}
	}
	return out
}

func statusFields(b []byte) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}
