package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
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
)

// Locks held through a held mount across a kill -9 of its daemon and an upgrade (issue 42: "locks held through
// FUSE (the lock owners' descriptors)" survive).

// The test binary doubles as a process holding POSIX locks through the mount (SESSIONFS_E2E_LOCKER), run as the
// mount's user: a normal user's mount is that user's alone.
func init() {
	if os.Getenv("SESSIONFS_E2E_LOCKER") != "" {
		os.Exit(locker())
	}
}

// locker opens HELPER_FILE read-write and answers each line of its stdin with one line: "lock START" and "unlock
// START" take and release a POSIX (F_SETLK) write lock of byte START through that descriptor; "getlk START" asks,
// through a second descriptor of the file (an owner of its own: F_OFD_GETLK), what stops a write lock of it (the
// type and the start, or "none"); "storm" starts locking and unlocking bytes 0 to 63 in turn, "stop" stops it and
// says how it went; "close" closes the first descriptor. Errors are answered as the errno's name.
func locker() int {
	fd, err := unix.Open(os.Getenv("HELPER_FILE"), unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		fmt.Println("open:", err)
		return 1
	}
	fmt.Println("open")
	var stop chan struct{}
	var done chan string
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		start := int64(0)
		if len(f) > 1 {
			start, _ = strconv.ParseInt(f[1], 10, 64)
		}
		answer := func(err error) {
			if err != nil {
				fmt.Println(unix.ErrnoName(err.(syscall.Errno)))
				return
			}
			fmt.Println("ok")
		}
		switch f[0] {
		case "lock", "unlock":
			typ := int16(unix.F_WRLCK)
			if f[0] == "unlock" {
				typ = unix.F_UNLCK
			}
			answer(unix.FcntlFlock(uintptr(fd), unix.F_SETLK, &unix.Flock_t{Type: typ, Start: start, Len: 1}))
		case "getlk":
			other, err := unix.Open(os.Getenv("HELPER_FILE"), unix.O_RDWR|unix.O_CLOEXEC, 0)
			if err != nil {
				answer(err)
				continue
			}
			lk := unix.Flock_t{Type: unix.F_WRLCK, Start: start, Len: 1}
			err = unix.FcntlFlock(uintptr(other), unix.F_OFD_GETLK, &lk)
			unix.Close(other)
			switch {
			case err != nil:
				answer(err)
			case lk.Type == unix.F_UNLCK:
				fmt.Println("none")
			default:
				fmt.Printf("type %d start %d\n", lk.Type, lk.Start)
			}
		case "storm":
			stop, done = make(chan struct{}), make(chan string, 1)
			go storm(fd, stop, done)
			fmt.Println("ok")
		case "stop":
			close(stop)
			fmt.Println(<-done)
		case "close":
			answer(unix.Close(fd))
		}
	}
	return 0
}

// storm locks and unlocks bytes 0 to 63 of fd in turn, each a POSIX write lock, until stop; done gets how many
// cycles it made and how many failed, and the first error.
func storm(fd int, stop <-chan struct{}, done chan<- string) {
	cycles, failed, first := 0, 0, error(nil)
	for {
		select {
		case <-stop:
			done <- fmt.Sprintf("cycles %d failed %d first %v", cycles, failed, first)
			return
		default:
		}
		start := int64(cycles % 64)
		for _, typ := range []int16{unix.F_WRLCK, unix.F_UNLCK} {
			if err := unix.FcntlFlock(uintptr(fd), unix.F_SETLK, &unix.Flock_t{Type: typ, Start: start, Len: 1}); err != nil {
				if failed++; first == nil {
					first = err
				}
			}
		}
		cycles++
	}
}

// startLocker starts a locker of the file at path through the mount, as uid.
func startLocker(t *testing.T, uid uint32, path string) *attacker {
	t.Helper()
	l := startAttackerAs(t, uid, exeForOthers(t), "SESSIONFS_E2E_LOCKER=1", "HELPER_FILE="+path)
	require.Equal(t, "open", l.line(t))
	return l
}

// ask sends the locker a line and returns its answer.
func (a *attacker) ask(t *testing.T, line string) string {
	t.Helper()
	_, err := fmt.Fprintln(a.stdin, line)
	require.NoError(t, err)
	return a.line(t)
}

// storeLock tries a write lock of byte start on the store's file at path, from this process, by kind: "posix"
// (F_SETLK, released at once) or "ofd" (F_OFD_SETLK on a descriptor of its own, released at once).
func storeLock(t *testing.T, path, kind string, start int64) error {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	cmd := unix.F_SETLK
	if kind == "ofd" {
		cmd = unix.F_OFD_SETLK
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Start: start, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), cmd, &lk); err != nil {
		return err
	}
	lk.Type = unix.F_UNLCK
	require.NoError(t, unix.FcntlFlock(f.Fd(), cmd, &lk))
	return nil
}

// locksKeptAcross checks that a lock the locker l holds through the mount on the store's file at storeFile is
// held across each of disruptions (kills, upgrades), and works as before after them: another process's POSIX and
// OFD locks get EAGAIN, GETLK through the mount names it, a lock request through the locker's descriptor opened
// before works, its unlock lets the lock go, and its close lets the rest go.
func locksKeptAcross(t *testing.T, l *attacker, storeFile string, disruptions ...func()) {
	t.Helper()
	require.Equal(t, "ok", l.ask(t, "lock 0"))
	require.ErrorIs(t, storeLock(t, storeFile, "ofd", 0), unix.EAGAIN, "held before")
	for _, disrupt := range disruptions {
		disrupt()
	}
	posixErr, ofdErr := storeLock(t, storeFile, "posix", 0), storeLock(t, storeFile, "ofd", 0)
	getlk := l.ask(t, "getlk 0")
	t.Logf("after %d disruptions, another process's POSIX lock: %v; its OFD lock: %v; GETLK through the mount: %s",
		len(disruptions), posixErr, ofdErr, getlk)
	assert.ErrorIs(t, posixErr, unix.EAGAIN, "another process's F_SETLK: the lock is held on")
	assert.ErrorIs(t, ofdErr, unix.EAGAIN, "another process's F_OFD_SETLK: the lock is held on")
	assert.Equal(t, fmt.Sprintf("type %d start 0", unix.F_WRLCK), getlk, "GETLK through the mount names the lock")

	more := l.ask(t, "lock 10")
	t.Logf("a lock through the descriptor opened before: %s", more)
	require.Equal(t, "ok", more)
	assert.ErrorIs(t, storeLock(t, storeFile, "ofd", 10), unix.EAGAIN, "the new lock reaches the store")
	assert.Equal(t, "none", l.ask(t, "getlk 20"), "a byte not locked")
	require.Equal(t, "ok", l.ask(t, "unlock 0"))
	assert.NoError(t, storeLock(t, storeFile, "ofd", 0), "the owner's unlock lets its lock go")
	assert.ErrorIs(t, storeLock(t, storeFile, "ofd", 10), unix.EAGAIN, "its other lock stays")
	require.Equal(t, "ok", l.ask(t, "close"))
	eventually(t, 10*time.Second, func() bool { return storeLock(t, storeFile, "ofd", 10) == nil },
		"the owner's close lets its locks go")
}

// killServing kills the daemon serving m and waits for the next one to serve.
func killServing(t *testing.T, m *mounted) func() {
	return func() {
		t.Helper()
		pid, err := inspect.ServingPID(m.mnt)
		require.NoError(t, err)
		took := strings.Count(m.log.String(), "took the connection over")
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
		if pid == m.cmd.Process.Pid {
			state, err := m.cmd.Process.Wait()
			require.NoError(t, err)
			m.cmd.ProcessState = state
		}
		eventually(t, 20*time.Second, func() bool { return strings.Count(m.log.String(), "took the connection over") > took },
			"a daemon takes over: %s", m.log)
	}
}

// TestMountTakeoverLocks (issue 42): a POSIX lock held through a root mount is held across two kill -9 of its
// daemon (another process's F_SETLK and F_OFD_SETLK on the store's file get EAGAIN; GETLK answers as before), and
// works as before after them through the descriptor opened before: another lock, an unlock that lets it go, a
// close that lets the rest go. A flock is held on too (its file is the kernel's passthrough backing file), and
// goes when its holder closes the file; an unlock through the descriptor opened before gets ENOLCK.
func TestMountTakeoverLocks(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a confined mount and its helper")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	helper := helperPID(t, m.cmd.Process.Pid)
	t.Cleanup(func() { endTakeoverMount(t, m, helper) })
	viaMount := func(name string) string { return filepath.Join(m.session("s1"), ".claude", name) }
	viaStore := func(name string) string { return filepath.Join(store, "sessions", "s1", ".claude", name) }

	fl, err := os.OpenFile(viaMount("flocked"), os.O_RDWR|os.O_CREATE, 0o600)
	require.NoError(t, err)
	defer fl.Close()
	require.NoError(t, unix.Flock(int(fl.Fd()), unix.LOCK_EX|unix.LOCK_NB))
	sfl, err := os.OpenFile(viaStore("flocked"), os.O_RDWR, 0)
	require.NoError(t, err)
	defer sfl.Close()
	require.ErrorIs(t, unix.Flock(int(sfl.Fd()), unix.LOCK_EX|unix.LOCK_NB), unix.EWOULDBLOCK, "held before the kill")

	l := startLocker(t, 0, viaMount("posix"))
	locksKeptAcross(t, l, viaStore("posix"), killServing(t, m), killServing(t, m))

	flockErr := unix.Flock(int(sfl.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	t.Logf("after the kills, another process's flock: %v", flockErr)
	assert.ErrorIs(t, flockErr, unix.EWOULDBLOCK, "the flock is held on: its file is the kernel's passthrough backing file")
	assert.ErrorIs(t, unix.Flock(int(fl.Fd()), unix.LOCK_UN), unix.ENOLCK, "a flock through a descriptor of the daemon before")
	require.NoError(t, fl.Close())
	eventually(t, 10*time.Second, func() bool { return unix.Flock(int(sfl.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil },
		"the holder's close lets its flock go: %s", m.log)
	require.NoError(t, unix.Flock(int(sfl.Fd()), unix.LOCK_UN))

	again := startLocker(t, 0, viaMount("posix"))
	assert.Equal(t, "ok", again.ask(t, "lock 0"), "opened again, it locks again")
	assert.ErrorIs(t, storeLock(t, viaStore("posix"), "ofd", 0), unix.EAGAIN, "held again")
}

// TestMountUpgradeKeepsLocks (issue 42): a POSIX lock held through a root mount is held across two upgrades (to
// another build and back), and works as before after them (locksKeptAcross).
func TestMountUpgradeKeepsLocks(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a confined mount and its holder")
	dir := t.TempDir()
	builds := []string{upgradeBuild(t, dir, "v0.0.0-locks.a"), upgradeBuild(t, dir, "v0.0.0-locks.b")}
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mountWith(t, builds[0], store)
	helper := helperPID(t, m.cmd.Process.Pid)
	t.Cleanup(func() { endTakeoverMount(t, m, helper) })
	upgrade := func(exe, version string) func() {
		return func() {
			cmd := exec.Command(exe, "mount", m.mnt)
			cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "upgrade to %s: %s", version, out)
			_, _, served := servedBy(t, m.mnt)
			require.Equal(t, version, served)
		}
	}
	l := startLocker(t, 0, filepath.Join(m.session("s1"), ".claude", "posix"))
	locksKeptAcross(t, l, filepath.Join(store, "sessions", "s1", ".claude", "posix"),
		upgrade(builds[1], "v0.0.0-locks.b"), upgrade(builds[0], "v0.0.0-locks.a"))
}

// TestMountHeldAsNormalUserKeepsLocks (issue 42): the same across two kill -9 of a normal user's daemon (its
// holder runs as that user; the locker too, the mount being the user's alone).
func TestMountHeldAsNormalUserKeepsLocks(t *testing.T) {
	needUserMounts(t)
	u := newUserPlace(t)
	store, mnt, exe := u.store, u.mnt, u.binary(t)
	out, err := u.run(exe, "new", "s1")
	require.NoError(t, err, out)
	m := &mounted{store: store, mnt: mnt, log: &syncBuffer{}}
	daemon, pids := u.startMount(t, exe, m.log)
	m.cmd = daemon
	holder := helperOf(daemon.Process.Pid)
	require.NotZero(t, holder, "the user's mount has a holder")
	*pids = append(*pids, holder)
	kill := killServing(t, m)
	killAndNote := func() {
		kill()
		if pid, err := inspect.ServingPID(mnt); err == nil {
			*pids = append(*pids, pid)
		}
	}
	l := startLocker(t, 65534, filepath.Join(mnt, "sessions", "s1", ".claude", "posix"))
	locksKeptAcross(t, l, filepath.Join(store, "sessions", "s1", ".claude", "posix"), killAndNote, killAndNote)
}

// TestMountTakeoverKeepsManyLockOwners (issue 42): a process holding as many POSIX lock owners as its uid may (2,048:
// 512 in each of four sessions, every one an owner's descriptor the holder keeps) across a kill -9 of the daemon:
// the next daemon adopts them all and serves (no hang, the mount serves on; how long the takeover took is logged),
// every lock is still held on the store's files, and they all go when the process ends.
func TestMountTakeoverKeepsManyLockOwners(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a confined mount and its helper")
	store := memoryStore(t)
	ids := []string{"s1", "s2", "s3", "s4"}
	for _, id := range ids {
		ok(t, store, "new", id)
	}
	m := mount(t, store, "--max-binds", "0") // the workspaces served through FUSE
	helper := helperPID(t, m.cmd.Process.Pid)
	t.Cleanup(func() { endTakeoverMount(t, m, helper) })
	var dirs []string
	for _, id := range ids {
		dirs = append(dirs, filepath.Join(m.session(id), "workspace"))
	}
	holder := startAttackerAs(t, 0, exeForOthers(t), "SESSIONFS_E2E_HELPER=locks-hold", "HELPER_OWNERS=8192",
		"HELPER_DIRS="+strings.Join(dirs, ":"))
	var rep locksHeld
	require.NoError(t, json.Unmarshal([]byte(holder.line(t)), &rep))
	t.Logf("owners locked in each session: %v, then %v", rep.Locked, rep.Errnos)
	total := 0
	for _, n := range rep.Locked {
		total += n
	}
	require.Equal(t, 2048, total, "the uid's share of owners")

	held := func() (n int) {
		for i, id := range ids {
			for owner := range rep.Locked[i] {
				p := filepath.Join(store, "sessions", id, "workspace", fmt.Sprintf("lock%03d", owner/64))
				if errors.Is(storeLock(t, p, "ofd", int64(owner%64)), unix.EAGAIN) {
					n++
				}
			}
		}
		return n
	}
	require.Equal(t, total, held(), "held before the kill")
	killServing(t, m)()
	took := regexp.MustCompile(`it served (\S+) after the daemon before ended`).FindAllStringSubmatch(m.log.String(), -1)
	adopted := regexp.MustCompile(`(\d+) POSIX lock owners adopted of (\d+) kept`).FindStringSubmatch(m.log.String())
	after := held()
	t.Logf("the takeover: %v; %v; %d of %d locks held after it", took, adopted, after, total)
	assert.Equal(t, total, after, "every lock is held after the kill")
	require.NotNil(t, adopted, "the next daemon adopts the owners: %s", m.log)
	assert.Equal(t, []string{strconv.Itoa(total), strconv.Itoa(total)}, adopted[1:])
	require.NoError(t, os.WriteFile(filepath.Join(m.session("s1"), "workspace", "after"), []byte("x"), 0o644), "the mount serves")

	holder.stop()
	eventually(t, 20*time.Second, func() bool { return held() == 0 }, "the locks go with the process that held them")
}

// TestMountTakeoverLockStorm (issue 42): a process locking and unlocking through the mount without pause while its
// daemon is killed five times (at whatever instant: a lock taken and not answered, an owner kept and not locked,
// closes not told to the holder) sees no error, and none of the locks it let go is held after (no copy the holder
// keeps holds one); another process's lock is held all along, and its close lets it go.
func TestMountTakeoverLockStorm(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a confined mount and its helper")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	helper := helperPID(t, m.cmd.Process.Pid)
	t.Cleanup(func() { endTakeoverMount(t, m, helper) })
	inStore := filepath.Join(store, "sessions", "s1", ".claude", "storm")
	// The lock kept all along is another process's: the storm's process holds nothing between its cycles, so each
	// cycle makes its owner's descriptor, keeps it with the holder, and closes it.
	keeper := startLocker(t, 0, filepath.Join(m.session("s1"), ".claude", "storm"))
	require.Equal(t, "ok", keeper.ask(t, "lock 100"))
	l := startLocker(t, 0, filepath.Join(m.session("s1"), ".claude", "storm"))
	require.Equal(t, "ok", l.ask(t, "storm"))
	for range 5 {
		killServing(t, m)()
	}
	report := l.ask(t, "stop")
	t.Logf("the storm across 5 kills: %s", report)
	assert.Regexp(t, `^cycles [1-9]\d* failed 0 first <nil>$`, report)
	var stale []int
	for b := range 64 {
		if storeLock(t, inStore, "ofd", int64(b)) != nil {
			stale = append(stale, b)
		}
	}
	assert.Empty(t, stale, "bytes let go and still locked")
	assert.ErrorIs(t, storeLock(t, inStore, "ofd", 100), unix.EAGAIN, "the lock kept all along")
	adopted := regexp.MustCompile(`(\d+) POSIX lock owners adopted of (\d+) kept`).FindAllStringSubmatch(m.log.String(), -1)
	t.Logf("adopted at each takeover: %v", adopted)
	require.Equal(t, "ok", keeper.ask(t, "close"))
	eventually(t, 10*time.Second, func() bool { return storeLock(t, inStore, "ofd", 100) == nil }, "the close lets it go")
}
