package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// helperLocksRanges read-locks every other byte of HELPER_FILE, HELPER_RANGES of them, through one descriptor
// (F_SETLK: one lock owner, this process). It reports in locksHeld.Locked how many it got and why the others
// were refused, then keeps its locks until its stdin ends.
func helperLocksRanges() int {
	n, _ := strconv.Atoi(os.Getenv("HELPER_RANGES"))
	rep := locksHeld{Errnos: map[string]int{}}
	fd, err := unix.Open(os.Getenv("HELPER_FILE"), unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 1
	}
	locked := 0
	for i := 0; i < n; i++ {
		if err := unix.FcntlFlock(uintptr(fd), unix.F_SETLK, &unix.Flock_t{Type: unix.F_RDLCK, Start: int64(2 * i), Len: 1}); err != nil {
			rep.Errnos[errnoName(err)]++
			continue
		}
		locked++
	}
	rep.Locked = []int{locked}
	b, _ := json.Marshal(rep)
	fmt.Println(string(b))
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// TestLockSharesManyUIDs: root in a container without a user namespace (or a user-namespaced one across its
// range) names whatever uid it likes in its FUSE requests, so a share per uid does not bound its session. Here
// the host's root does the same through an --allow-other mount: 17 processes, each of its own uid (1000-1016),
// each take 512 POSIX locks (each an owner of its own in the daemon, 64 on each of 8 files) in session a1. What
// session a1 holds is bounded by its own share, whatever uids took it: root's locks, a process's POSIX lock and
// a SQLite write in session v1 go on.
func TestLockSharesManyUIDs(t *testing.T) {
	need(t, os.Geteuid() == 0, "the attacker runs as 17 other uids: needs root")
	const uids, owners = 17, 512
	store := t.TempDir()
	ok(t, store, "new", "a1")
	ok(t, store, "new", "v1")
	var dirs []string
	for i := range uids {
		d := filepath.Join(store, "sessions", "a1", "workspace", fmt.Sprintf("u%d", 1000+i))
		require.NoError(t, os.Mkdir(d, 0o755))
		require.NoError(t, os.Lchown(d, 1000+i, 1000+i))
		dirs = append(dirs, d)
	}
	m := mount(t, store, "--allow-other", "--max-binds", "0")
	openUp(t, m.mnt)
	exe := exeForOthers(t)

	held, refused := 0, map[string]int{}
	for i := range uids {
		a := startAttackerAs(t, uint32(1000+i), exe, "SESSIONFS_E2E_HELPER=locks-hold", "HELPER_OWNERS="+strconv.Itoa(owners),
			"HELPER_DIRS="+filepath.Join(m.session("a1"), "workspace", filepath.Base(dirs[i])))
		var rep locksHeld
		require.NoError(t, json.Unmarshal([]byte(a.line(t)), &rep))
		held += rep.Locked[0]
		for e, n := range rep.Errnos {
			refused[e] += n
		}
	}
	t.Logf("session a1, %d uids x %d owners: %d locks held, refused %v", uids, owners, held, refused)
	require.Positive(t, held, "the attacker could take no lock: the attack did not run")
	assert.Less(t, held, uids*owners/2, "one session held the locks of %d uids' shares", uids)
	failed := otherSessionLocks(t, filepath.Join(m.session("v1"), "workspace"))
	t.Logf("session v1 (root) meanwhile: failed %v", failed)
	assert.Empty(t, failed, "another session's locks were refused")
}

// TestLockRangesPerOwner: one process of uid 65534 read-locking every other byte of a file through one
// descriptor gets only so many disjoint ranges; past them the daemon answers ENOLCK (as the kernel does when its
// lock table is full), and it still serves another session's locks.
func TestLockRangesPerOwner(t *testing.T) {
	need(t, os.Geteuid() == 0, "the attacker runs as another uid: needs root")
	const ranges = 4000
	store := t.TempDir()
	attackerSessions(t, store, "atk")
	ok(t, store, "new", "vic")
	m := mount(t, store, "--allow-other", "--max-binds", "0")
	openUp(t, m.mnt)
	a := startAttacker(t, exeForOthers(t), "SESSIONFS_E2E_HELPER=locks-ranges", "HELPER_RANGES="+strconv.Itoa(ranges),
		"HELPER_FILE="+filepath.Join(m.session("atk"), "workspace", "ranges"))
	var rep locksHeld
	require.NoError(t, json.Unmarshal([]byte(a.line(t)), &rep))
	t.Logf("uid 65534, %d alternating read locks through one descriptor: %d taken, refused %v", ranges, rep.Locked[0], rep.Errnos)
	require.Positive(t, rep.Locked[0], "the attacker could take no lock: the attack did not run")
	assert.Less(t, rep.Locked[0], ranges, "one owner's ranges are not bounded")
	assert.Equal(t, map[string]int{"ENOLCK": ranges - rep.Locked[0]}, rep.Errnos)
	assert.Empty(t, otherSessionLocks(t, filepath.Join(m.session("vic"), "workspace")), "another session's locks were refused")
}
