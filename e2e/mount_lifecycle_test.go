package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMountLifecycle: unmount by command, a stale mount of a killed daemon is cleared by the next mount, and bad
// mountpoints get one clear line.
func TestMountLifecycle(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store, "--takeover=false") // with a holder, mount on it hands it over (TestMountUpgrade)

	r := cli(t, store, "mount", m.mnt)
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "already mounted")

	// kill -9 leaves "transport endpoint is not connected"; the next mount clears it by itself.
	m.kill(t)
	var sfs syscall.Statfs_t
	require.ErrorIs(t, syscall.Statfs(m.mnt, &sfs), syscall.ENOTCONN, "a killed daemon leaves a stale mount")
	start := time.Now()
	m.start(t)
	t.Logf("remounted over a stale mount in %v", time.Since(start))
	assert.DirExists(t, filepath.Join(m.session("s1"), "workspace"))

	ok(t, store, "unmount", m.mnt)
	assert.False(t, isFUSEMount(m.mnt))
	r = cli(t, store, "unmount", m.mnt)
	assert.Contains(t, r.stderr, "not mounted")

	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	r = cli(t, store, "mount", file)
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "is not a folder")
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1)
}

// mount --daemon returns once the mount serves and prints the daemon's pid; the daemon logs to --log and ends
// with sessionfs unmount. A mount that cannot come up returns its error, not a pid.
func TestMountDaemon(t *testing.T) {
	needFUSE(t)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	mnt := filepath.Join(t.TempDir(), "mnt")
	logPath := filepath.Join(t.TempDir(), "state", "mount.log")
	r := cli(t, store, "mount", "--daemon", "--log", logPath, mnt)
	pid := 0
	_, _ = fmt.Sscan(r.stdout, &pid)
	t.Cleanup(func() {
		if isFUSEMount(mnt) || staleMount(mnt) {
			_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
		if pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	require.Equal(t, 0, r.code, r.stderr)
	require.Greater(t, pid, 0, "stdout is the pid: %q", r.stdout)
	assert.Contains(t, r.stderr, logPath)
	assert.True(t, isFUSEMount(mnt), "the mount serves when mount --daemon returns")
	assert.DirExists(t, filepath.Join(mnt, "sessions", "s1", "workspace"))
	assert.NoError(t, syscall.Kill(pid, 0), "the daemon runs")
	b, err := os.ReadFile(logPath)
	require.NoError(t, err)
	assert.Contains(t, string(b), "serving "+store)
	if os.Geteuid() == 0 {
		// Started with its bounding set shrunk already (confine.StartDaemon), the daemon is as confined as a
		// mount in the foreground: every thread holds the listed capabilities, and its helper its own.
		keep := uint64(1<<0 | 1<<1 | 1<<3 | 1<<4 | 1<<6 | 1<<7 | 1<<21)
		for _, st := range threadStatus(t, pid) {
			assert.Equal(t, "2", st["Seccomp"])
			for _, set := range []string{"CapEff", "CapPrm", "CapBnd"} {
				got, err := strconv.ParseUint(st[set], 16, 64)
				require.NoError(t, err)
				assert.Equal(t, keep, got, "%s = %s", set, st[set])
			}
		}
		helper := procStatus(t, helperPID(t, pid))
		got, err := strconv.ParseUint(helper["CapBnd"], 16, 64)
		require.NoError(t, err)
		assert.Equal(t, keep|1<<19|1<<23, got, "the helper's bounding set")
	}

	r = cli(t, store, "mount", "--daemon", "--log", logPath, filepath.Join(t.TempDir(), "again"))
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "already mounted at "+mnt)
	assert.Empty(t, r.stdout)

	ok(t, store, "unmount", mnt)
	eventually(t, 10*time.Second, func() bool { return syscall.Kill(pid, 0) != nil }, "the daemon outlived its mount")
	assert.False(t, isFUSEMount(mnt))
}

// TestSystemdReady: under systemd (NOTIFY_SOCKET) the mount says READY=1 once it serves.
func TestSystemdReady(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	require.NoError(t, err)
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	m := mount(t, t.TempDir())
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	buf := make([]byte, 256)
	n, err := conn.Read(buf)
	require.NoError(t, err)
	assert.Contains(t, string(buf[:n]), "READY=1")
	assert.True(t, isFUSEMount(m.mnt))
	unit, err := os.ReadFile("../contrib/systemd/sessionfs.service")
	require.NoError(t, err)
	assert.Contains(t, string(unit), "Type=notify")
}

// A mountpoint inside the store, a store inside the mountpoint, a store mounted twice and a mountpoint that
// holds files are refused with one line each, and nothing is mounted.
func TestMountPlacesRefused(t *testing.T) {
	needFUSE(t)
	store := t.TempDir()
	ok(t, store, "new", "j1")
	inside := filepath.Join(store, "sessions", "j1", "workspace", "loop")
	r := cli(t, store, "mount", inside)
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "is inside the store")
	assert.False(t, isFUSEMount(inside))

	outer := t.TempDir()
	r = cliWith(t, filepath.Join(outer, "store"), "", nil, nil, "mount", outer)
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Contains(t, r.stderr, "is inside the mountpoint")

	m := mount(t, store)
	second := filepath.Join(t.TempDir(), "again")
	r = cli(t, store, "mount", second)
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "already mounted at "+m.mnt)
	assert.False(t, isFUSEMount(second))

	full := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(full, "mine.txt"), []byte("keep"), 0o644))
	m.stop(t)
	r = cli(t, store, "mount", full)
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "is not empty")
	assert.FileExists(t, filepath.Join(full, "mine.txt"))
}

// TestMountFUSEErrors: no /dev/fuse, or no permission to open it, gives one clear line each.
func TestMountFUSEErrors(t *testing.T) {
	need(t, os.Geteuid() == 0, "hiding /dev/fuse and switching users need root")
	_, err := exec.LookPath("unshare")
	need(t, err == nil, "unshare (util-linux) is missing")
	store := t.TempDir()
	mnt := filepath.Join(t.TempDir(), "mnt")
	// A private mount namespace whose /dev has no fuse device.
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c",
		`mount -t tmpfs none /dev && exec "$0" mount "$1"`, bin, mnt)
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	assert.Equal(t, "sessionfs: FUSE is not available: /dev/fuse is missing (load the fuse module; in a container, pass --device /dev/fuse)\n", string(out))

	fi, err := os.Stat("/dev/fuse")
	require.NoError(t, err)
	require.NoError(t, os.Chmod("/dev/fuse", 0o600))
	defer os.Chmod("/dev/fuse", fi.Mode().Perm())
	base, err := os.MkdirTemp("/tmp", "sessionfs-nofuse-")
	require.NoError(t, err)
	defer os.RemoveAll(base)
	require.NoError(t, os.Chown(base, 65534, 65534))
	cmd = exec.Command(bin, "mount", filepath.Join(base, "mnt"))
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+filepath.Join(base, "store"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err = cmd.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "no permission to open /dev/fuse")
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(string(out)), "\n")+1, "%s", out)
}

// TestMountWithoutFusermount: as root, with no fusermount or fusermount3 anywhere (a machine without fuse3), the
// mount comes up by mounting directly.
func TestMountWithoutFusermount(t *testing.T) {
	need(t, os.Geteuid() == 0, "mounting directly needs root")
	needFUSE(t)
	_, err := exec.LookPath("unshare")
	need(t, err == nil, "unshare (util-linux) is missing")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	mnt := filepath.Join(t.TempDir(), "mnt")
	// In a private mount namespace, every fusermount binary is hidden behind /dev/null, then sessionfs mounts,
	// lists and unmounts.
	script := `for b in /bin/fusermount /bin/fusermount3 /usr/bin/fusermount /usr/bin/fusermount3 /usr/local/bin/fusermount /usr/local/bin/fusermount3; do
  [ -e "$b" ] && mount --bind /dev/null "$b"
done
if command -v fusermount >/dev/null 2>&1 && fusermount -V >/dev/null 2>&1; then echo "fusermount still usable"; exit 98; fi
if command -v fusermount3 >/dev/null 2>&1 && fusermount3 -V >/dev/null 2>&1; then echo "fusermount3 still usable"; exit 98; fi
"$0" mount "$1" & pid=$!
i=0; while ! [ -d "$1/sessions/s1/workspace" ]; do i=$((i+1)); [ $i -gt 200 ] && { echo "not mounted"; kill $pid; exit 97; }; sleep 0.05; done
ls "$1/sessions"
kill -TERM $pid; wait $pid; echo "exit $?"`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script, bin, mnt)
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	done := make(chan struct{})
	var out []byte
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("mounting without fusermount hung: %s", out)
	}
	require.NoError(t, err, string(out))
	// ls lists s1 and the daemon exits 0 (its own lines may come before or after ls's).
	assert.Regexp(t, `(?m)^s1$`, string(out))
	assert.True(t, strings.HasSuffix(string(out), "\nexit 0\n"), "%s", out)
}

// TestInterruptBusyMount: Ctrl-C of a foreground mount a shell still uses says what it waits for (the process
// by pid and name) and keeps serving it; a second Ctrl-C stops at once.
func TestInterruptBusyMount(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	var extra []string
	if os.Geteuid() == 0 {
		require.NoError(t, os.Chmod(store, 0o755))
		extra = append(extra, "--allow-other")
	}
	m := mount(t, store, extra...)
	user := exec.Command("sleep", "60")
	user.Dir = filepath.Join(m.session("s1"), ".claude")
	require.NoError(t, user.Start())
	t.Cleanup(func() { _ = user.Process.Kill(); _ = user.Wait() })
	var other *exec.Cmd // another user's process: root's helper reads its /proc entries with SYS_PTRACE
	if os.Geteuid() == 0 {
		for d := filepath.Dir(m.mnt); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
			require.NoError(t, os.Chmod(d, 0o755)) // t.TempDir makes 0700 folders
		}
		other = exec.Command("sleep", "61")
		other.Dir = filepath.Join(m.mnt, "sessions")
		other.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		require.NoError(t, other.Start())
		t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	}
	require.NoError(t, m.cmd.Process.Signal(os.Interrupt))
	eventually(t, 10*time.Second, func() bool { return strings.Contains(m.log.String(), "is in use") },
		"the first interrupt says what it waits for: %s", m.log.String())
	assert.Contains(t, m.log.String(), fmt.Sprintf("%d sleep", user.Process.Pid))
	if other != nil {
		assert.Contains(t, m.log.String(), fmt.Sprintf("%d sleep", other.Process.Pid), "another user's process too")
	}
	assert.Contains(t, m.log.String(), "interrupt again to stop now")
	exited := make(chan struct{})
	go func() { _ = m.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
		t.Fatal("the daemon stopped serving a process still using the mount")
	case <-time.After(500 * time.Millisecond):
	}
	require.NoError(t, m.cmd.Process.Signal(os.Interrupt))
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("a second interrupt did not stop the daemon")
	}
}

// unmount touches only sessionfs mounts.
func TestUnmountOnlyOurs(t *testing.T) {
	need(t, os.Geteuid() == 0, "mounting a tmpfs needs root")
	dir := t.TempDir()
	require.NoError(t, exec.Command("mount", "-t", "tmpfs", "tmpfs", dir).Run())
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	r := cli(t, t.TempDir(), "unmount", dir)
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "is a tmpfs mount, not a sessionfs one")
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	assert.Contains(t, string(b), " "+dir+" ", "the tmpfs is still mounted")

	// A busy sessionfs mount is detached lazily, and the user is told.
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	busy := exec.Command("sleep", "30")
	busy.Dir = filepath.Join(m.session("s1"), ".claude")
	require.NoError(t, busy.Start())
	t.Cleanup(func() { _ = busy.Process.Kill(); _ = busy.Wait() })
	r = cli(t, store, "unmount", m.mnt)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "detached lazily")
	assert.Contains(t, r.stderr, fmt.Sprintf("in use by %d sleep", busy.Process.Pid), "who keeps it busy is named")
	assert.False(t, isFUSEMount(m.mnt))
}

// TestCrashRecovery: kill -9 of the daemon while writers append through the mount. Every line fsync'd before the
// kill is in the store; the next mount on the same mountpoint clears the dead mount by itself, in under a second.
func TestCrashRecovery(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	// The workspace through FUSE (a bound one is the store's own folder, which no daemon crash touches).
	m := mount(t, store, "--max-binds", "0")
	const writers = 4
	acked := make([]atomic.Int64, writers) // lines each writer saw fsync'd
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		cmd := appender(t, filepath.Join(m.session("s1"), "workspace", "log.jsonl"), fmt.Sprint(w), 0, true)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				n, _ := strconv.Atoi(sc.Text())
				acked[w].Store(int64(n) + 1)
			}
			_ = cmd.Wait()
		}()
	}
	// Killed mid-stream: once every writer has some lines down (a loaded machine starts them slowly).
	eventually(t, 30*time.Second, func() bool {
		for w := range acked {
			if acked[w].Load() < 10 {
				return false
			}
		}
		return true
	}, "the writers did not get going")
	m.kill(t)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("writers hang on the dead mount instead of getting an error")
	}

	// Every acknowledged line is in the store, whole.
	data, err := os.ReadFile(filepath.Join(store, "sessions", "s1", "workspace", "log.jsonl"))
	require.NoError(t, err)
	got := make([]int, writers)
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var e struct {
			Writer string
			N      int
		}
		require.NoError(t, json.Unmarshal(line, &e), "a torn line: %q", line)
		w, _ := strconv.Atoi(e.Writer)
		require.Equal(t, got[w], e.N, "writer %d's lines are in order, none missing", w)
		got[w]++
	}
	ackedN := make([]int, writers)
	for w := range acked {
		ackedN[w] = int(acked[w].Load())
		assert.GreaterOrEqual(t, got[w], ackedN[w], "writer %d: every fsync'd line survived", w)
	}

	start := time.Now()
	m.start(t)
	took := time.Since(start)
	t.Logf("remounted over the dead mount in %v; lines acknowledged %v, stored %v", took, ackedN, got)
	assert.Less(t, took, 3*time.Second, "no wait on the dead mount (its speed is make bench's)")
	assert.FileExists(t, filepath.Join(m.session("s1"), "workspace", "log.jsonl"))
}

// A store whose mount's daemon died is reported as stale, with the way out, not as "not mounted".
func TestStaleMountReported(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	m.kill(t)
	require.True(t, staleMount(m.mnt))
	r := cli(t, store, "exec", "s1", "--", "true")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "the store's mount at "+m.mnt+" is stale (its daemon is gone; sessionfs mount serves it again)")
	assert.NotContains(t, r.stderr, "not mounted")
}

// TestMountDaemonNamesItsMountpoint (issue 40, defect 5): mount --daemon at another mountpoint names it in the
// command that stops it (a bare "sessionfs unmount" stops the default one); its log says so too, not Ctrl-C,
// has the time on each line, and a last line when the mount ends.
func TestMountDaemonNamesItsMountpoint(t *testing.T) {
	needFUSE(t)
	store := t.TempDir()
	mnt := filepath.Join(t.TempDir(), "other mnt")
	logPath := filepath.Join(t.TempDir(), "mount.log")
	r, pid := startDaemon(t, store, mnt, logPath)
	assert.Contains(t, r.stderr, "sessionfs unmount '"+mnt+"' to stop it")
	ok(t, store, "unmount", mnt)
	eventually(t, 10*time.Second, func() bool { return syscall.Kill(pid, 0) != nil }, "the daemon outlived its mount")

	b, err := os.ReadFile(logPath)
	require.NoError(t, err)
	log := string(b)
	assert.NotContains(t, log, "Ctrl-C")
	assert.Contains(t, log, "(sessionfs unmount '"+mnt+"' to stop it)")
	lines := strings.Split(strings.TrimSpace(log), "\n")
	for _, l := range lines {
		stamp, _, _ := strings.Cut(l, " ")
		_, err := time.Parse(time.RFC3339, stamp)
		assert.NoError(t, err, "a line without its time: %q", l)
	}
	assert.Contains(t, lines[len(lines)-1], "sessionfs: unmounted "+mnt+"; the mount ends")
}

// TestMountSaysNextSteps: the mount (make run's) says what to do next, not how it serves; --verbose says how it
// serves (issue 40: a newcomer read capability lists where the next command was wanted).
func TestMountSaysNextSteps(t *testing.T) {
	store := t.TempDir()
	m := mount(t, store)
	eventually(t, 5*time.Second, func() bool { return strings.Contains(m.log.String(), "(sessionfs mount --verbose") },
		"the mount says the next steps: %s", m.log)
	log := m.log.String()
	assert.Contains(t, log, "\n  sessionfs new ")
	assert.Contains(t, log, "\n  sessionfs exec ID -- claude ")
	for _, capability := range []string{"are binds of the store's folders", "not root:", "the serving process is confined"} {
		assert.NotContains(t, log, capability, "without --verbose")
	}
	m.stop(t)

	m.start(t, "--verbose")
	how := "not root: workspace, app and mcps are served through FUSE too"
	if os.Geteuid() == 0 {
		how = "the serving process is confined"
	}
	eventually(t, 5*time.Second, func() bool { return strings.Contains(m.log.String(), how) },
		"--verbose says how the mount serves: %s", m.log)
	assert.NotContains(t, m.log.String(), "next, in another terminal")
}

// TestMountDaemonSaysANewStore (issue 40, defect 8): mount --daemon of a store that does not exist yet (a mistyped
// --store) says "created a new store" where the user reads it, not in the daemon's log.
func TestMountDaemonSaysANewStore(t *testing.T) {
	needFUSE(t)
	store := filepath.Join(t.TempDir(), "stroe")
	mnt := filepath.Join(t.TempDir(), "mnt")
	logPath := filepath.Join(t.TempDir(), "mount.log")
	r, pid := startDaemon(t, store, mnt, logPath)
	assert.Contains(t, r.stderr, "created a new store at "+store)
	ok(t, "", "unmount", mnt)
	eventually(t, 10*time.Second, func() bool { return syscall.Kill(pid, 0) != nil }, "the daemon outlived its mount")
}

// startDaemon runs mount --daemon of store at mnt (--store, so a store yet to be made is named) and returns its
// result and the daemon's pid; the mount and the daemon are gone when the test ends.
func startDaemon(t *testing.T, store, mnt, logPath string) (result, int) {
	t.Helper()
	r := cli(t, "", "--store", store, "mount", "--daemon", "--log", logPath, mnt)
	pid := 0
	_, _ = fmt.Sscan(r.stdout, &pid)
	t.Cleanup(func() {
		if isFUSEMount(mnt) || staleMount(mnt) {
			_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
		if pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	require.Equal(t, 0, r.code, r.stderr)
	require.Greater(t, pid, 0, "stdout is the pid: %q", r.stdout)
	return r, pid
}
