package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// locksHeld is what the locks-hold helper reports once it has taken its locks.
type locksHeld struct {
	Locked []int          `json:"locked"` // owners that got their lock, in each folder
	Errnos map[string]int `json:"errnos"` // why the first refused one in each folder was refused
}

// helperLocksHold takes, in each folder of HELPER_DIRS, up to HELPER_OWNERS write locks, each an OFD lock of a
// descriptor of its own (so an owner of its own in the daemon), 64 to a file; it stops in a folder at the first
// refusal. With HELPER_UNLOCK=1 it releases each lock at once but keeps its descriptor open. It reports, then
// keeps everything until its stdin ends.
func helperLocksHold() int {
	owners, _ := strconv.Atoi(os.Getenv("HELPER_OWNERS"))
	unlock := os.Getenv("HELPER_UNLOCK") == "1"
	rep := locksHeld{Errnos: map[string]int{}}
	for _, dir := range strings.Split(os.Getenv("HELPER_DIRS"), ":") {
		n := 0
		for i := 0; i < owners; i++ {
			fd, err := unix.Open(filepath.Join(dir, fmt.Sprintf("lock%03d", i/64)), unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
			if err != nil {
				rep.Errnos["open: "+err.Error()]++
				break
			}
			lk := unix.Flock_t{Type: unix.F_WRLCK, Start: int64(i % 64), Len: 1}
			if err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk); err != nil {
				rep.Errnos[err.Error()]++
				break
			}
			n++
			if unlock {
				lk.Type = unix.F_UNLCK
				if err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk); err != nil {
					rep.Errnos["unlock: "+err.Error()]++
				}
			}
		}
		rep.Locked = append(rep.Locked, n)
	}
	b, _ := json.Marshal(rep)
	fmt.Println(string(b))
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// helperLocksWait takes an exclusive flock on each file of HELPER_FILE (names separated by ':'), says "holding",
// then makes HELPER_WAITERS blocking requests for them in turn, each on a descriptor of its own in a thread of
// its own, printing how each ends ("ENOLCK"...). With HELPER_READONLY=1 every descriptor is read-only (of
// files it may only read: the mount keeps such exclusive flocks apart among read-only descriptors). It keeps
// its locks until its stdin ends.
func helperLocksWait() int {
	paths := strings.Split(os.Getenv("HELPER_FILE"), ":")
	n, _ := strconv.Atoi(os.Getenv("HELPER_WAITERS"))
	mode := unix.O_RDWR | unix.O_CREAT
	if os.Getenv("HELPER_READONLY") == "1" {
		mode = unix.O_RDONLY
	}
	for _, path := range paths {
		holder, err := unix.Open(path, mode|unix.O_CLOEXEC, 0o644)
		if err == nil {
			err = unix.Flock(holder, unix.LOCK_EX|unix.LOCK_NB)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "hold:", err)
			return 1
		}
	}
	var mu sync.Mutex
	say := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Println(s)
	}
	say("holding")
	for i := 0; i < n; i++ {
		fd, err := unix.Open(paths[i%len(paths)], mode&^unix.O_CREAT|unix.O_CLOEXEC, 0)
		if err != nil {
			say("open " + errnoName(err))
			continue
		}
		go func() {
			err := unix.Flock(fd, unix.LOCK_EX)
			say(errnoName(err))
		}()
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// attackerSessions makes sessions for the attacker: the store's folders of each are uid 65534's.
func attackerSessions(t *testing.T, store string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		ok(t, store, "new", id)
		require.NoError(t, filepath.Walk(filepath.Join(store, "sessions", id), func(p string, _ os.FileInfo, err error) error {
			if err == nil {
				err = os.Lchown(p, 65534, 65534)
			}
			return err
		}))
	}
}

// otherSessionLocks is another session's work with locks through the mount, as root: 64 owners' locks on one
// file, a process's POSIX lock, and a SQLite write. It returns what failed, and how often.
func otherSessionLocks(t *testing.T, dir string) map[string]int {
	t.Helper()
	failed := map[string]int{}
	p := filepath.Join(dir, "locks")
	for i := 0; i < 64; i++ {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
		require.NoError(t, err)
		defer f.Close()
		lk := unix.Flock_t{Type: unix.F_WRLCK, Start: int64(i), Len: 1}
		if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk); err != nil {
			failed["an owner's lock: "+errnoName(err)]++
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, "posix"), os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	defer f.Close()
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &unix.Flock_t{Type: unix.F_WRLCK, Start: 100, Len: 1}); err != nil {
		failed["a process's lock: "+errnoName(err)]++
	}

	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "db.sqlite")+"?_pragma=busy_timeout(2000)")
	require.NoError(t, err)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, q := range []string{"CREATE TABLE IF NOT EXISTS t (n INTEGER)", "INSERT INTO t VALUES (1)"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			failed[fmt.Sprintf("sqlite %q: %v", q, err)]++
		}
	}
	return failed
}

// TestLockSharesPerSession: one session's processes holding every POSIX lock the daemon would give them (each
// owner costs the daemon a descriptor) use up their uid's share in their session, and then their uid's, never
// another's: another session's locks and SQLite writes go on. Owners that unlocked cost nothing. (The attacker
// locking another session's files is TestLockSharesOfTheCaller's.)
func TestLockSharesPerSession(t *testing.T) {
	need(t, os.Geteuid() == 0, "the attacker runs as another uid: needs root")
	store := t.TempDir()
	attackerSessions(t, store, "a1", "a2", "a3", "a4", "a5")
	ok(t, store, "new", "b")
	m := mount(t, store, "--allow-other", "--max-binds", "0")
	openUp(t, m.mnt)
	exe := exeForOthers(t)
	ws := func(id string) string { return filepath.Join(m.session(id), "workspace") }
	// An attacker that exited is released in the background: the kernel sends its files' RELEASEs after the
	// process is gone, and its owners' descriptors and open files count against its shares until each is
	// answered. A subtest starts once the daemon holds no more descriptors than before the first attacker.
	pid := m.serverPID(t)
	before := descriptors(t, pid)
	settled := func(t *testing.T) {
		eventually(t, time.Minute, func() bool { return descriptors(t, pid) <= before+16 },
			"the daemon still holds %d descriptors (%d before the first attacker)", descriptors(t, pid), before)
	}
	hold := func(t *testing.T, owners int, unlock bool, ids ...string) (*attacker, locksHeld) {
		var dirs []string
		for _, id := range ids {
			dirs = append(dirs, ws(id))
		}
		a := startAttacker(t, exe, "SESSIONFS_E2E_HELPER=locks-hold", "HELPER_OWNERS="+strconv.Itoa(owners),
			"HELPER_DIRS="+strings.Join(dirs, ":"), "HELPER_UNLOCK="+map[bool]string{true: "1"}[unlock])
		var rep locksHeld
		require.NoError(t, json.Unmarshal([]byte(a.line(t)), &rep))
		return a, rep
	}

	t.Run("a session fills its own share", func(t *testing.T) {
		a, rep := hold(t, 8192, false, "a1") // 128 files x 64 owners: the daemon's whole budget before
		defer a.stop()
		t.Logf("session a1 (uid 65534): %d owners got their lock, then %v", rep.Locked[0], rep.Errnos)
		assert.Less(t, rep.Locked[0], 8192, "one session took every lock the daemon gives")
		a2, rep2 := hold(t, 64, false, "a2")
		defer a2.stop()
		assert.Equal(t, []int{64}, rep2.Locked, "another session of the same uid was refused: %v", rep2.Errnos)
		assert.Empty(t, otherSessionLocks(t, ws("b")), "another session's locks were refused")
	})

	t.Run("a uid fills its own share", func(t *testing.T) {
		settled(t)
		a, rep := hold(t, 8192, false, "a1", "a2", "a3", "a4", "a5")
		defer a.stop()
		total := 0
		for _, n := range rep.Locked {
			total += n
		}
		t.Logf("uid 65534 across 5 sessions: %v owners got their lock (%d), then %v", rep.Locked, total, rep.Errnos)
		assert.Less(t, total, 8192)
		assert.Empty(t, otherSessionLocks(t, ws("b")), "another uid's session's locks were refused")
	})

	t.Run("owners that unlocked cost nothing", func(t *testing.T) {
		settled(t)
		// Locked and unlocked at once, descriptors kept open: twice the uid's share in a session, within its
		// share of open files (opens.go).
		a, rep := hold(t, 1024, true, "a1")
		defer a.stop()
		require.Equal(t, []int{1024}, rep.Locked, "%v", rep.Errnos)
		a1, rep1 := hold(t, 64, false, "a1")
		defer a1.stop()
		assert.Equal(t, []int{64}, rep1.Locked, "the session's own later locks were refused: %v", rep1.Errnos)
		assert.Empty(t, otherSessionLocks(t, ws("b")), "another session's locks were refused")
	})
}

// TestLockWaitersShared: one session's processes holding every lock they may and making 2,000 blocking lock
// requests on a file they hold get their uid's share of waiters in their session, the rest are refused at once;
// those waiting are tried at most about once a second, so the daemon stays idle and another session's work is
// not slowed (figures logged).
func TestLockWaitersShared(t *testing.T) {
	need(t, os.Geteuid() == 0, "the attacker runs as another uid: needs root")
	const waiters = 2000
	store := memoryStore(t)
	attackerSessions(t, store, "a")
	ok(t, store, "new", "b")
	m := mount(t, store, "--allow-other", "--max-binds", "0")
	openUp(t, m.mnt)
	exe := exeForOthers(t)
	bdir := filepath.Join(m.session("b"), "workspace")
	pid := m.serverPID(t)

	// work is another session's: 300 files made and removed, 100 lock and unlock of a POSIX lock.
	work := func() (time.Duration, int) {
		start, failed := time.Now(), 0
		for i := 0; i < 300; i++ {
			p := filepath.Join(bdir, fmt.Sprintf("n%d", i))
			if os.WriteFile(p, nil, 0o644) != nil || os.Remove(p) != nil {
				failed++
			}
		}
		f, err := os.OpenFile(filepath.Join(bdir, "lk"), os.O_RDWR|os.O_CREATE, 0o644)
		require.NoError(t, err)
		defer f.Close()
		for i := 0; i < 100; i++ {
			for _, typ := range []int16{unix.F_WRLCK, unix.F_UNLCK} {
				if unix.FcntlFlock(f.Fd(), unix.F_SETLK, &unix.Flock_t{Type: typ, Len: 1}) != nil {
					failed++
				}
			}
		}
		return time.Since(start), failed
	}
	// measure runs the work LOCKS_ROUNDS times (9): its median and fastest times (the fastest is the least
	// disturbed by the machine's other work), the daemon's CPU time for it, and what failed.
	rounds := 9
	if n, err := strconv.Atoi(os.Getenv("LOCKS_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	type figures struct {
		median, fastest time.Duration
		cpuEach         time.Duration // the daemon's CPU time for each round, whatever else runs on the machine
	}
	measure := func() (figures, int) {
		var ds []time.Duration
		failed := 0
		cpu0 := cpuTicks(t, pid)
		for range rounds {
			d, f := work()
			ds, failed = append(ds, d), failed+f
		}
		slices.Sort(ds)
		each := time.Duration(cpuTicks(t, pid)-cpu0) * 10 * time.Millisecond / time.Duration(rounds)
		return figures{ds[len(ds)/2], ds[0], each}, failed
	}
	_, failed := measure() // warm: the names and the daemon's caches
	require.Zero(t, failed)
	alone, failed := measure()
	require.Zero(t, failed)

	// The attacker's worst: every lock its session may hold, and 2,000 blocking requests.
	holder := startAttacker(t, exe, "SESSIONFS_E2E_HELPER=locks-hold", "HELPER_OWNERS=8192",
		"HELPER_DIRS="+filepath.Join(m.session("a"), "workspace"))
	var held locksHeld
	require.NoError(t, json.Unmarshal([]byte(holder.line(t)), &held))
	a := startAttacker(t, exe, "SESSIONFS_E2E_HELPER=locks-wait", "HELPER_FILE="+filepath.Join(m.session("a"), "workspace", "w"),
		"HELPER_WAITERS="+strconv.Itoa(waiters))
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
	// Refused: by the waiters' share (ENOLCK), or at the open by the caller's share of open files (opens.go).
	refused := func() int { mu.Lock(); defer mu.Unlock(); return ends["ENOLCK"] + ends["open EMFILE"] }
	// Every request either refused or waiting in the kernel for the daemon's answer.
	eventually(t, 60*time.Second, func() bool { return refused()+inFUSE(a.cmd.Process.Pid) == waiters },
		"the attacker's requests did not all reach the daemon")

	cpu0, wall0 := cpuTicks(t, pid), time.Now()
	time.Sleep(3 * time.Second) // the window measured, not a wait for an event
	idle := cpuShare(t, pid, cpu0, wall0)
	attacked, failed := measure()
	assert.Zero(t, failed, "session b's work failed")
	assert.GreaterOrEqual(t, refused(), waiters*3/4, "one session had %d requests waiting on the daemon", waiters-refused())
	mu.Lock()
	t.Logf("session a holds %d locks (then %v) and made %d blocking requests: %v; the daemon used %.1f%% of a CPU "+
		"with nothing else to do", held.Locked[0], held.Errnos, waiters, ends, 100*idle)
	mu.Unlock()
	a.stop()
	holder.stop()
	after, failed := measure() // alone again: what changed meanwhile on the machine shows here too
	require.Zero(t, failed)
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1fms", d.Seconds()*1000) }
	cost := func(pick func(figures) time.Duration) string {
		base := (pick(alone) + pick(after)) / 2
		return fmt.Sprintf("%s, %s before and after, %s meanwhile (%+.1f%%)", ms(pick(alone)), ms(pick(after)),
			ms(pick(attacked)), 100*(pick(attacked).Seconds()/base.Seconds()-1))
	}
	t.Logf("session b's work, %d rounds: median %s; fastest %s; the daemon's CPU time for each %s", rounds,
		cost(func(f figures) time.Duration { return f.median }), cost(func(f figures) time.Duration { return f.fastest }),
		cost(func(f figures) time.Duration { return f.cpuEach }))
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(m.mnt, &st), "the daemon serves after the attack")
}

// cpuShare is the share of a CPU process pid used since it had used cpu0 ticks at wall0.
func cpuShare(t *testing.T, pid int, cpu0 int64, wall0 time.Time) float64 {
	t.Helper()
	return float64(cpuTicks(t, pid)-cpu0) / 100 / time.Since(wall0).Seconds()
}

// inFUSE is how many threads of process pid wait for the FUSE daemon's answer.
func inFUSE(pid int) int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", pid))
	n := 0
	for _, p := range tasks {
		if b, err := os.ReadFile(p); err == nil && (strings.Contains(string(b), "request_wait_answer") || strings.HasPrefix(string(b), "fuse_")) {
			n++
		}
	}
	return n
}

// cpuTicks is the user and system time process pid has used, in clock ticks (1/100 s).
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	_, rest, found := strings.Cut(string(b), ") ")
	require.True(t, found)
	f := strings.Fields(rest) // from field 3 on: utime and stime are fields 14 and 15
	u, err := strconv.ParseInt(f[11], 10, 64)
	require.NoError(t, err)
	s, err := strconv.ParseInt(f[12], 10, 64)
	require.NoError(t, err)
	return u + s
}

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

// descriptors counts the descriptors process pid holds open.
func descriptors(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	require.NoError(t, err)
	return len(ents)
}
