package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sfsmount "github.com/sessionfs/sessionfs/mount"
)

// takeoverLoop is an agent's shell on the mount: from a cwd in its transcript folder (a node id the kernel holds
// across every kill), every 50 ms it appends a numbered line to its transcript, and to a log it holds open (its
// file handle and passthrough backing file opened by a daemon killed since), reads that log anew, reads
// .claude/settings.json and stats its session, and prints when it did (nanoseconds); it stops at the first error,
// and when $2 exists.
const takeoverLoop = `cd "$1/.claude/projects/-session-workspace" || exit 9
exec 3>> held.jsonl || exit 8
i=0
while [ ! -e "$2" ]; do
	i=$((i+1))
	echo "{\"n\":$i}" >> t.jsonl || exit 1
	echo "{\"n\":$i}" >&3 || exit 4
	cat held.jsonl > /dev/null || exit 5
	cat "$1/.claude/settings.json" > /dev/null || exit 2
	stat "$1" > /dev/null || exit 3
	date +%s%N
	sleep 0.05
done
echo "end $i"
`

// TestMountTakeoverKill (issue 42): on a confined root mount with --takeover, kill -9 of the serving daemon, five
// times, is not seen by a shell working in a session: the kernel queues its requests, the helper starts a daemon
// that takes the connection over, and they complete. Every line the shell appended is in the store once and in
// order; the longest stall is reported.
func TestMountTakeoverKill(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a confined mount and its helper")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store, "--takeover")
	daemon := m.cmd.Process.Pid
	helper := helperPID(t, daemon)
	t.Cleanup(func() { endTakeoverMount(t, m, helper) })

	stop := filepath.Join(t.TempDir(), "stop")
	out, errs := &syncBuffer{}, &syncBuffer{}
	loop := exec.Command("sh", "-c", takeoverLoop, "sh", m.session("s1"), stop)
	loop.Stdout, loop.Stderr = out, errs
	require.NoError(t, loop.Start())
	ended := make(chan struct{})
	var loopErr error
	go func() { loopErr = loop.Wait(); close(ended) }()
	t.Cleanup(func() {
		_ = os.WriteFile(stop, nil, 0o644)
		select {
		case <-ended:
		case <-time.After(30 * time.Second):
			_ = loop.Process.Kill()
		}
	})
	done := func() int { return strings.Count(out.String(), "\n") }
	eventually(t, 10*time.Second, func() bool { return done() >= 5 }, "the loop runs: %s", errs.String())

	const kills = 5
	for round := range kills {
		before := done()
		pid := m.serverPID(t)
		require.NotEqual(t, helper, pid, "the helper holds the connection, it does not serve it")
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
		if pid == daemon { // the test's child: reaped here (its output stays open in the helper, so not cmd.Wait)
			state, err := m.cmd.Process.Wait()
			require.NoError(t, err)
			m.cmd.ProcessState = state
		}
		eventually(t, 20*time.Second, func() bool {
			next, err := sfsmount.ServingPID(m.mnt)
			return err == nil && next != pid && done() >= before+5
		}, "round %d: a daemon takes over from %d and the loop goes on (loop: %s; mount: %s)", round, pid, errs.String(), m.log.String())
	}

	require.NoError(t, os.WriteFile(stop, nil, 0o644))
	select {
	case <-ended:
		require.NoError(t, loopErr, "the loop saw an error: %s", errs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("the loop did not end: %s", errs.String())
	}
	assert.Empty(t, errs.String(), "the loop saw no error")
	assert.Equal(t, kills, strings.Count(m.log.String(), "took the connection over"), "one takeover per kill: %s", m.log.String())

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var n int
	_, err := fmt.Sscanf(lines[len(lines)-1], "end %d", &n)
	require.NoError(t, err, "the loop's last line: %q", lines[len(lines)-1])
	var want strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&want, "{\"n\":%d}\n", i)
	}
	for _, name := range []string{"t.jsonl", "held.jsonl"} {
		files, err := filepath.Glob(filepath.Join(store, "sessions", "s1", ".claude", "projects", "*", name))
		require.NoError(t, err)
		require.Len(t, files, 1, "one %s in the store", name)
		b, err := os.ReadFile(files[0])
		require.NoError(t, err)
		assert.Equal(t, want.String(), string(b), "every line of %s in the store once and in order", name)
	}

	// The stalls: the time between two iterations beyond the loop's own 50 ms sleep.
	var gaps []time.Duration
	var last int64
	for _, l := range lines[:len(lines)-1] {
		at, err := strconv.ParseInt(l, 10, 64)
		require.NoError(t, err, "a time: %q", l)
		if last != 0 {
			gaps = append(gaps, time.Duration(at-last))
		}
		last = at
	}
	slices.Sort(gaps)
	top := gaps[max(0, len(gaps)-kills):]
	t.Logf("%d iterations, %d kills of the serving daemon: longest time between two iterations %v (the %d longest: %v; median %v)",
		n, kills, gaps[len(gaps)-1], len(top), top, gaps[len(gaps)/2])
}

// endTakeoverMount unmounts a --takeover mount and waits for its helper and the daemon it started to end with it.
func endTakeoverMount(t *testing.T, m *mounted, helper int) {
	pids := []int{helper}
	if daemon, err := sfsmount.ServingPID(m.mnt); err == nil {
		pids = append(pids, daemon)
	}
	m.stop(t)
	for _, pid := range pids {
		gone := func() bool { return syscall.Kill(pid, 0) != nil }
		deadline := time.Now().Add(20 * time.Second)
		for !gone() && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if !gone() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("process %d (the helper %d, or the daemon it started) outlived its unmounted mount", pid, helper)
		}
	}
}
