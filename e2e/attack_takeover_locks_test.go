package e2e

import (
	"encoding/json"
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

// Attacks on the lock owners' descriptors a held mount keeps with its holder (mount/takeover/lockowners.go).

// TestAttackLockOwnersBlockUpgrade: uid 65534 on an --allow-other root mount holds 2,000 POSIX lock owners (its
// uid's share, 500 in each of four sessions it may write), which the holder keeps. An upgrade (`sessionfs mount`
// on the mountpoint) must still hand the mount over, and the attacker's locks be held across it. The holder hands
// the owners to the binary it executes: in one environment string they were past the kernel's 128 KiB a string
// (E2BIG), and every upgrade was refused for as long as the attacker held them.
func TestAttackLockOwnersBlockUpgrade(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a confined mount, its holder, and an attacker of another uid")
	store := t.TempDir()
	ids := []string{"a1", "a2", "a3", "a4"}
	attackerSessions(t, store, ids...)
	m := attackedHeldMount(t, store)

	var dirs []string
	for _, id := range ids {
		dirs = append(dirs, filepath.Join(m.session(id), "workspace"))
	}
	a := startAttacker(t, exeForOthers(t), "SESSIONFS_E2E_HELPER=locks-hold", "HELPER_OWNERS=500",
		"HELPER_DIRS="+strings.Join(dirs, ":"))
	defer a.stop()
	var rep locksHeld
	require.NoError(t, json.Unmarshal([]byte(a.line(t)), &rep))
	total := 0
	for _, n := range rep.Locked {
		total += n
	}
	t.Logf("uid 65534 holds %d lock owners (%v), refused: %v", total, rep.Locked, rep.Errnos)
	require.Equal(t, 2000, total, "the attacker's owners, within its shares")
	held := filepath.Join(store, "sessions", "a4", "workspace", "lock007")
	require.ErrorIs(t, storeLock(t, held, "ofd", 51), unix.EAGAIN, "the attacker's last lock, held before")

	cmd := exec.Command(bin, "mount", m.mnt)
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	out, err := cmd.CombinedOutput()
	t.Logf("sessionfs mount on the held mountpoint (an upgrade): %v: %s", err, strings.TrimSpace(string(out)))
	require.NoError(t, err, "the upgrade was refused while a session holds many lock owners; log: %s", m.log)
	assert.ErrorIs(t, storeLock(t, held, "ofd", 51), unix.EAGAIN, "the attacker's lock is held across the upgrade")
	assert.Contains(t, m.log.String(), "POSIX lock owners adopted of 2000 kept")
}

// TestAttackWaitersDuringUpgrade: uid 65534 holds a flock and keeps 200 blocking flock requests on it through the
// mount (its share of waiters, 128, in flight in the daemon; the rest refused), requests that never finish while
// it holds the lock. An upgrade goes through all the same (a hand-over waits a bounded time for the requests in
// flight, and the kernel resends those to the next daemon), and another session works on after it.
func TestAttackWaitersDuringUpgrade(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a confined mount, its holder, and an attacker of another uid")
	store := t.TempDir()
	attackerSessions(t, store, "a")
	ok(t, store, "new", "b")
	m := attackedHeldMount(t, store)

	const waiters = 200
	a := startAttacker(t, exeForOthers(t), "SESSIONFS_E2E_HELPER=locks-wait", "HELPER_WAITERS=200",
		"HELPER_FILE="+filepath.Join(m.session("a"), "workspace", "w"))
	defer a.stop()
	require.Equal(t, "holding", a.line(t))
	refused := 0
	for refused < waiters-128 { // those past its share are answered at once; the rest wait
		require.Equal(t, "ENOLCK", a.line(t), "a blocking request answered while the lock is held")
		refused++
	}

	start := time.Now()
	cmd := exec.Command(bin, "mount", m.mnt)
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	out, err := cmd.CombinedOutput()
	t.Logf("an upgrade with %d blocking requests in flight (%d refused): %v in %s: %s", waiters-refused, refused,
		err, time.Since(start).Round(time.Millisecond), strings.TrimSpace(string(out)))
	require.NoError(t, err, "log: %s", m.log)
	assert.Empty(t, otherSessionLocks(t, filepath.Join(m.session("b"), "workspace")), "another session's locks after the upgrade")
}
