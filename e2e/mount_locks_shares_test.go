package e2e

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
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

// TestReadOnlyExclusiveFlock: a reader through a read-only mount (as a read-only CSI publish is) asking for an
// exclusive flock holds a shared lock on the store's file: readers on the host are not locked out, and a writer
// there waits only as for any reader. Among the mount's read-only descriptors it stays exclusive, so
// `flock -x` through the mount still serialises.
func TestReadOnlyExclusiveFlock(t *testing.T) {
	need(t, os.Geteuid() == 0, "the reader runs as another uid: needs root")
	_, err := exec.LookPath("flock")
	need(t, err == nil, "flock(1) is missing (util-linux)")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	viaStore := filepath.Join(store, "sessions", "s1", "workspace", "f")
	require.NoError(t, os.WriteFile(viaStore, []byte("data"), 0o644))

	for _, mode := range []string{"read-only mount", "read-only descriptor"} {
		t.Run(mode, func(t *testing.T) {
			args := []string{"--allow-other", "--max-binds", "0"}
			if mode == "read-only mount" {
				args = append(args, "--read-only")
			}
			m := mount(t, store, args...)
			openUp(t, m.mnt)
			viaMount := filepath.Join(m.session("s1"), "workspace", "f")
			// flock(1) opens its file read-only; it holds the lock until its stdin ends.
			reader := func() (io.WriteCloser, *bufio.Scanner) {
				cmd := exec.Command("flock", "-x", "-n", viaMount, "-c", "echo held; exec cat")
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
				stdin, err := cmd.StdinPipe()
				require.NoError(t, err)
				stdout, err := cmd.StdoutPipe()
				require.NoError(t, err)
				require.NoError(t, cmd.Start())
				t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
				return stdin, bufio.NewScanner(stdout)
			}
			stdin, out := reader()
			require.True(t, out.Scan(), "the reader got no lock")
			require.Equal(t, "held", out.Text())

			host, err := os.OpenFile(viaStore, os.O_RDWR, 0)
			require.NoError(t, err)
			defer host.Close()
			sh := unix.Flock(int(host.Fd()), unix.LOCK_SH|unix.LOCK_NB)
			t.Logf("a host reader's shared flock while the mount's reader holds an exclusive one: %v", errnoName(sh))
			assert.NoError(t, sh, "the mount's read-only reader locks the host's readers out")
			require.NoError(t, unix.Flock(int(host.Fd()), unix.LOCK_UN))
			assert.ErrorIs(t, unix.Flock(int(host.Fd()), unix.LOCK_EX|unix.LOCK_NB), unix.EWOULDBLOCK,
				"a writer waits for the reader, as for any reader's shared lock")

			second := exec.Command("flock", "-s", "-n", viaMount, "-c", "true")
			second.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			var exit *exec.ExitError
			require.ErrorAs(t, second.Run(), &exit, "a second read-only descriptor of the mount got a flock beside the exclusive one")
			assert.Equal(t, 1, exit.ExitCode(), "flock -n fails with 1 when the lock is taken")

			stdin.Close()
			eventually(t, 10*time.Second, func() bool { return unix.Flock(int(host.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil },
				"the reader's lock stayed after it ended")
			require.NoError(t, unix.Flock(int(host.Fd()), unix.LOCK_UN))
		})
	}
}
