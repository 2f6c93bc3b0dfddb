package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// helperLocksRead opens each file of HELPER_FILES (names separated by ':') read-only and takes a POSIX read
// lock (F_SETLK: this process is the lock owner) on it. It reports in locksHeld.Locked 1 or 0 for each file,
// then keeps its locks until its stdin ends.
func helperLocksRead() int {
	rep := locksHeld{Errnos: map[string]int{}}
	for _, path := range strings.Split(os.Getenv("HELPER_FILES"), ":") {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			err = unix.FcntlFlock(uintptr(fd), unix.F_SETLK, &unix.Flock_t{Type: unix.F_RDLCK, Len: 1})
		}
		if err != nil {
			rep.Errnos[errnoName(err)]++
			rep.Locked = append(rep.Locked, 0)
			continue
		}
		rep.Locked = append(rep.Locked, 1)
	}
	b, _ := json.Marshal(rep)
	fmt.Println(string(b))
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// crossSessions is a store with the attacker's session atk (uid 65534's) and the victim's session vic (root's)
// with eight files any user may read, served through an --allow-other mount. It returns a copy of the test
// binary uid 65534 may run, vic's workspace through the mount and the eight files.
func crossSessions(t *testing.T) (string, string, []string) {
	t.Helper()
	need(t, os.Geteuid() == 0, "the attacker runs as another uid: needs root")
	store := t.TempDir()
	attackerSessions(t, store, "atk")
	ok(t, store, "new", "vic")
	m := mount(t, store, "--allow-other", "--max-binds", "0")
	openUp(t, m.mnt)
	vic := filepath.Join(m.session("vic"), "workspace")
	var files []string
	for i := range 8 {
		p := filepath.Join(vic, fmt.Sprintf("shared%d", i))
		require.NoError(t, os.WriteFile(p, []byte("data"), 0o644))
		require.NoError(t, os.Chmod(p, 0o644))
		files = append(files, p)
	}
	return exeForOthers(t), vic, files
}

// privateFile makes a new file of vic's that only root may open, through the mount.
func privateFile(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return p
}

// TestLockSharesOfTheCaller: uid 65534 may read another session's files (sessions are world-readable by
// default), so it may lock them for reading; what that costs the daemon is charged to it (its uid in that
// session, on that file), never to the session's owner. 64 processes of uid 65534 each holding a read lock on
// each of vic's eight files leave vic's root process free to lock its own new private file, to read-lock one of
// those eight, and to write its SQLite database; 2,000 blocking requests of uid 65534 on vic's files leave vic's
// own waiter waiting, and it gets its lock once free.
func TestLockSharesOfTheCaller(t *testing.T) {
	t.Run("held", func(t *testing.T) {
		exe, vic, files := crossSessions(t)
		// readers starts n processes of uid 65534 at once, each read-locking the eight files, and counts the
		// locks they hold and why the others were refused.
		readers := func(n int) (int, map[string]int) {
			var as []*attacker
			for range n {
				// Under -race, each would sleep a second as it exits (GORACE atexit_sleep_ms).
				as = append(as, startAttacker(t, exe, "SESSIONFS_E2E_HELPER=locks-read", "GORACE=atexit_sleep_ms=0",
					"HELPER_FILES="+strings.Join(files, ":")))
			}
			held, refused := 0, map[string]int{}
			for _, a := range as {
				var rep locksHeld
				require.NoError(t, json.Unmarshal([]byte(a.line(t)), &rep))
				for _, n := range rep.Locked {
					held += n
				}
				for e, n := range rep.Errnos {
					refused[e] += n
				}
			}
			return held, refused
		}
		held, refused := readers(64)
		t.Logf("attacker uid 65534, 64 processes: %d read locks held on the victim's 8 files, refused %v", held, refused)
		require.Positive(t, held, "the attacker could lock none of the victim's files: the attack did not run")
		more, refused := readers(1)
		t.Logf("a 65th process of uid 65534: %d held, refused %v", more, refused)
		assert.Zero(t, more, "uid 65534's owners on a file of the victim's are not bounded")

		failed := map[string]string{}
		// One of the eight: the attacker holds 64 read locks on it, another reader's is not in conflict.
		f, err := os.Open(files[0])
		require.NoError(t, err)
		defer f.Close()
		if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &unix.Flock_t{Type: unix.F_RDLCK, Len: 1}); err != nil {
			failed["F_RDLCK on shared0"] = errnoName(err)
		}
		// A new file the attacker cannot even open.
		own, err := os.OpenFile(privateFile(t, vic, "victim.lock"), os.O_RDWR, 0)
		require.NoError(t, err)
		defer own.Close()
		if err := unix.FcntlFlock(own.Fd(), unix.F_SETLK, &unix.Flock_t{Type: unix.F_WRLCK, Len: 1}); err != nil {
			failed["F_WRLCK on victim.lock (0600)"] = errnoName(err)
		}
		db, err := sql.Open("sqlite", "file:"+privateFile(t, vic, "victim.db")+"?_pragma=busy_timeout(2000)")
		require.NoError(t, err)
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, q := range []string{"CREATE TABLE t (n INTEGER)", "INSERT INTO t VALUES (1)"} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				failed["sqlite "+q] = err.Error()
			}
		}
		t.Logf("the victim's root process then: %d of 4 failed %v", len(failed), failed)
		assert.Empty(t, failed, "the attacker's locks on the victim's files used up the victim's share")
	})

	t.Run("waiting", func(t *testing.T) {
		const waiters = 2000
		exe, vic, files := crossSessions(t)
		// uid 65534 holds an exclusive flock on each file through a read-only descriptor (the mount keeps it
		// exclusive among read-only descriptors) and waits on them 2,000 times over.
		a := startAttacker(t, exe, "SESSIONFS_E2E_HELPER=locks-wait", "HELPER_READONLY=1",
			"HELPER_FILE="+strings.Join(files, ":"), "HELPER_WAITERS="+strconv.Itoa(waiters))
		require.Equal(t, "holding", a.line(t))
		var mu sync.Mutex
		ends := map[string]int{}
		go func() {
			for a.lines.Scan() {
				mu.Lock()
				ends[a.lines.Text()]++
				mu.Unlock()
			}
		}()
		count := func() int {
			mu.Lock()
			defer mu.Unlock()
			n := 0
			for _, c := range ends {
				n += c
			}
			return n
		}
		eventually(t, 60*time.Second, func() bool { return count()+inFUSE(a.cmd.Process.Pid) == waiters },
			"the attacker's requests did not all reach the daemon")
		waiting := waiters - count()
		mu.Lock()
		t.Logf("attacker uid 65534: %d blocking requests on the victim's 8 files, %d waiting in the daemon, ended %v",
			waiters, waiting, ends)
		mu.Unlock()
		require.Positive(t, waiting, "none of the attacker's requests waited: the attack did not run")

		// The victim's root process waits for its own lock, which it holds through another descriptor.
		p := privateFile(t, vic, "victim.lock")
		holder, err := os.OpenFile(p, os.O_RDWR, 0)
		require.NoError(t, err)
		defer holder.Close()
		waiter, err := os.OpenFile(p, os.O_RDWR, 0)
		require.NoError(t, err)
		defer waiter.Close()
		require.NoError(t, unix.FcntlFlock(holder.Fd(), unix.F_OFD_SETLK, &unix.Flock_t{Type: unix.F_WRLCK, Len: 1}))
		got := make(chan error, 1)
		go func() {
			got <- unix.FcntlFlock(waiter.Fd(), unix.F_OFD_SETLKW, &unix.Flock_t{Type: unix.F_WRLCK, Len: 1})
		}()
		var early error
		ended := false
		eventually(t, 30*time.Second, func() bool {
			select {
			case early = <-got:
				ended = true
				return true
			default:
				return inFUSE(os.Getpid()) > 0
			}
		}, "the victim's waiter neither ended nor reached the daemon")
		if ended {
			t.Logf("the victim's root waiter ended while its lock was held: %s", errnoName(early))
			assert.Fail(t, "the attacker's waiters on the victim's files used up the victim's share", errnoName(early))
			return
		}
		require.NoError(t, unix.FcntlFlock(holder.Fd(), unix.F_OFD_SETLK, &unix.Flock_t{Type: unix.F_UNLCK, Len: 1}))
		select {
		case err = <-got:
		case <-time.After(30 * time.Second):
			t.Fatal("the victim's waiter did not get its lock once it was free")
		}
		t.Logf("the victim's root waiter waited, then got its lock once free: %s", errnoName(err))
		assert.NoError(t, err, "the victim's waiter")
	})
}
