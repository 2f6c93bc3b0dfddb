package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAttackIndexKeepsPrivateSessionsPrivate: a session whose folder its owner made private (0700) keeps its
// session.json from other users; the sessions index ls writes (<store>/index/sessions, a copy of every session's
// metadata) must not hand it to them either: another user (uid 65534) cannot read the index.
func TestAttackIndexKeepsPrivateSessionsPrivate(t *testing.T) {
	need(t, os.Geteuid() == 0, "reads as uid 65534")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ok(t, store, "new", "s2", "--label", "secret=tangerine")
	require.NoError(t, os.Chmod(filepath.Join(store, "sessions", "s2"), 0o700))
	openUp(t, filepath.Join(store, "sessions"))
	require.Contains(t, ok(t, store, "ls"), "s2") // writes the index
	asNobody := func(args ...string) (string, error) {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := asNobody("cat", filepath.Join(store, "sessions", "s2", "session.json"))
	require.Error(t, err, "the store denies 65534 the private session's metadata: %s", out)
	out, err = asNobody("cat", filepath.Join(store, "index", "sessions"))
	t.Logf("uid 65534 reading the index: %v", err)
	assert.NotContains(t, out, "tangerine", "the index handed 65534 a private session's labels")
}

// helperChurn renames a file to and fro in folder HELPER_PATH as fast as it can until its stdin ends (two events
// a rename, no inode made), then prints how many renames it made.
func helperChurn() int {
	a, b := filepath.Join(os.Getenv("HELPER_PATH"), "churn.jsonl"), filepath.Join(os.Getenv("HELPER_PATH"), "churn2.jsonl")
	if err := os.WriteFile(a, nil, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "churn:", err)
		return 1
	}
	var stop atomic.Bool
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); stop.Store(true) }()
	fmt.Println("ready")
	n := 0
	for ; !stop.Load(); n++ {
		if err := unix.Rename(a, b); err != nil {
			fmt.Fprintln(os.Stderr, "churn:", err)
			return 1
		}
		a, b = b, a
	}
	fmt.Println(n)
	return 0
}

// TestAttackIndexWatchChurn: a session's own process (uid 65534) renames a file to and fro in its transcript
// folder, which the mount's index watch watches, as fast as it can. Bound: its first event drops the session's
// watches, so it costs the daemon one event per reader's ask (at most one a second), never a queue overflowing
// into every session's re-arming: the other sessions stay vouched for, as they were, and the daemon's CPU under
// attack stays under a twentieth of a core. The victim is ls, timed before and under the attack.
func TestAttackIndexWatchChurn(t *testing.T) {
	needRootMount(t)
	store := memoryStore(t) // where renames are fastest
	require.NoError(t, os.Chmod(store, 0o755))
	const n = 40
	ids := []string{}
	for i := range n {
		ids = append(ids, fmt.Sprintf("s%02d", i))
	}
	for _, id := range ids {
		ok(t, store, "new", id)
	}
	ok(t, store, "ls") // the index
	own := giveSession(t, store, "s00")
	for d := filepath.Dir(own); d != store; d = filepath.Dir(d) {
		require.NoError(t, os.Chmod(d, 0o755)) // the way down from the store
	}
	if strings.HasPrefix(store, os.TempDir()+"/") {
		openUp(t, store) // not in /dev/shm (tmpfs missing): the way to it too; /dev/shm is everyone's already
	}
	m := mount(t, store)
	vouched := filepath.Join(m.mnt, ".sessionfs-index")
	read := func() map[string]string {
		b, err := os.ReadFile(vouched)
		require.NoError(t, err)
		out := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if id, fp, found := strings.Cut(line, " "); found {
				out[id] = fp
			}
		}
		return out
	}
	var before map[string]string
	eventually(t, 10*time.Second, func() bool { before = read(); return len(before) == n }, "every session armed")
	lsTime := func() time.Duration {
		var times []time.Duration
		for range 5 {
			start := time.Now()
			ok(t, store, "ls")
			times = append(times, time.Since(start))
		}
		slices.Sort(times)
		return times[2]
	}
	quiet := lsTime()

	a := startAttacker(t, exeForOthers(t), "SESSIONFS_E2E_HELPER=churn",
		"HELPER_PATH="+filepath.Join(own, ".claude", "projects", "-session-workspace"))
	require.Equal(t, "ready", a.line(t))
	time.Sleep(time.Second)
	pid := m.serverPID(t)
	ticks := cpuTicks(t, pid)
	start := time.Now()
	attacked := lsTime()
	for range 10 {
		got := read() // a reader's ask: the churning session is armed again (once a second at most)
		for _, id := range ids[1:] {
			assert.Equal(t, before[id], got[id], "%s: vouched for as it was, the churn elsewhere", id)
		}
		time.Sleep(200 * time.Millisecond)
	}
	used := time.Duration(cpuTicks(t, pid)-ticks) * 10 * time.Millisecond
	window := time.Since(start)
	a.stdin.Close()
	made := a.line(t)
	t.Logf("the churn made %s renames; ls took %v quiet, %v under it; the daemon used %v of CPU in %v",
		made, quiet, attacked, used, window.Round(time.Millisecond))
	assert.Less(t, used, window/20, "the daemon's CPU under the churn")
}
