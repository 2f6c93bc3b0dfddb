package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/confine"
)

// The attacks of issue 36 on exec --landlock, each run as root (the worst case: Landlock is the only thing that
// refuses root) by a command of the session, on the store itself and through the mount (where the run is the
// namespace helper's): the command must not read the raw disk through a device node it makes, hold a
// capability, widen its rules by swapping the name it was run as, reach a unix socket outside its sandbox, type
// into the terminal, or signal a process outside.

// The test binary doubles as the attacker inside the sandbox (copied into the session, which may run it).
func init() {
	switch os.Getenv("SESSIONFS_E2E_ATTACK") {
	case "":
		return
	case "connect":
		os.Exit(attackConnect())
	case "tiocsti":
		os.Exit(attackTIOCSTI())
	}
}

// attackConnect connects to each stream socket of ATTACK_STREAM (a path, or @name for an abstract one) and prints
// what answered, then sends a datagram to ATTACK_DGRAM from a socketpair's socket (which may name any peer).
func attackConnect() int {
	for _, target := range strings.Split(os.Getenv("ATTACK_STREAM"), ",") {
		c, err := net.DialTimeout("unix", target, 10*time.Second)
		if err != nil {
			fmt.Printf("%s: %v\n", target, err)
			continue
		}
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		fmt.Printf("%s: answered %q\n", target, line)
		c.Close()
	}
	if p := os.Getenv("ATTACK_DGRAM"); p != "" {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			fmt.Printf("dgram: socketpair: %v\n", err)
			return 0
		}
		fmt.Printf("dgram: sendto: %v\n", unix.Sendto(fds[0], []byte("spoofed\n"), 0, &unix.SockaddrUnix{Name: p}))
	}
	return 0
}

// attackTIOCSTI pushes ATTACK_TEXT into the terminal on fd 0, byte by byte, with the request as the kernel
// reads it and again with high bits set (the kernel takes an unsigned int: a filter comparing 64 bits misses it).
func attackTIOCSTI() int {
	for _, req := range []uint64{unix.TIOCSTI, unix.TIOCSTI | 1<<32} {
		pushed := 0
		var err error
		for _, b := range []byte(os.Getenv("ATTACK_TEXT")) {
			c := b
			if _, _, e := unix.Syscall(unix.SYS_IOCTL, 0, uintptr(req), uintptr(unsafe.Pointer(&c))); e != 0 {
				err = e
				break
			}
			pushed++
		}
		fmt.Printf("ioctl %#x: pushed %d bytes: %v\n", req, pushed, err)
	}
	return 0
}

// landlockTarget is a session to attack from: its folder as the command sees it (the store's, or the mount's).
type landlockTarget struct {
	store, session string
}

// eachLandlockPath runs f on the store itself and through the mount.
func eachLandlockPath(t *testing.T, f func(t *testing.T, lt landlockTarget)) {
	need(t, os.Geteuid() == 0, "root: the worst case, which only Landlock and the dropped capabilities refuse")
	need(t, confine.Supported() == nil, "a kernel with Landlock ABI 6 and seccomp")
	for _, mounted := range []bool{false, true} {
		name := "on the store"
		if mounted {
			name = "through the mount"
		}
		t.Run(name, func(t *testing.T) {
			store := t.TempDir()
			ok(t, store, "new", "s1")
			lt := landlockTarget{store: store, session: filepath.Join(store, "sessions", "s1")}
			if mounted {
				lt.session = mount(t, store).session("s1")
			}
			f(t, lt)
		})
	}
}

// landlocked runs CMD under exec --landlock in session s1 (extra: flags before --).
func (lt landlockTarget) landlocked(t *testing.T, extra []string, cmd ...string) result {
	t.Helper()
	args := append(append([]string{"exec", "s1", "--landlock"}, extra...), "--")
	return cli(t, lt.store, append(args, cmd...)...)
}

// attacker copies the test binary into the session's workspace and returns its path there.
func (lt landlockTarget) attacker(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	src, err := os.Open(self)
	require.NoError(t, err)
	defer src.Close()
	p := filepath.Join(lt.session, "workspace", "attacker")
	dst, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())
	return p
}

// TestLandlockAttackDeviceNode: the command makes a block device node of a disk (a loop device holding a
// marker: another session's files on the host's disk, in the finding) in its TMPDIR and in its workspace, and
// reads it. It must hold no capability in any set, and the nodes must not be made.
func TestLandlockAttackDeviceNode(t *testing.T) {
	_, err := exec.LookPath("losetup")
	need(t, err == nil, "losetup (util-linux) for a block device to read")
	img := filepath.Join(t.TempDir(), "disk.img")
	disk := make([]byte, 1<<20)
	copy(disk, hostMarker)
	require.NoError(t, os.WriteFile(img, disk, 0o600))
	out, err := exec.Command("losetup", "-f", "--show", img).Output()
	need(t, err == nil, fmt.Sprintf("a loop device (losetup: %v)", err))
	loop := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", loop).Run() })
	var st unix.Stat_t
	require.NoError(t, unix.Stat(loop, &st), "%q", loop)
	major, minor := unix.Major(st.Rdev), unix.Minor(st.Rdev)

	eachLandlockPath(t, func(t *testing.T, lt landlockTarget) {
		r := lt.landlocked(t, nil, "sh", "-c", "grep ^Cap /proc/self/status")
		require.Equal(t, 0, r.code, r.stderr)
		t.Logf("capabilities of the command:\n%s", r.stdout)
		for _, set := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
			assert.Contains(t, r.stdout, set+":\t0000000000000000", "%s: the command holds a capability", set)
		}
		for _, where := range []string{`"$TMPDIR/disk"`, "disk"} {
			r := lt.landlocked(t, nil, "sh", "-c", fmt.Sprintf("mknod %s b %d %d && head -c %d %s", where, major, minor, len(hostMarker), where))
			t.Logf("mknod %s: exit %d, %q %s", where, r.code, r.stdout, strings.TrimSpace(r.stderr))
			assert.NotContains(t, r.stdout, hostMarker, "the raw disk read through a node made in %s", where)
			assert.NotEqual(t, 0, r.code)
		}
		assert.NoFileExists(t, filepath.Join(lt.session, "workspace", "disk"))
	})
}

// TestLandlockAttackCommandSwap: the session's own files race the run: while exec --landlock runs ./run.sh from
// the workspace again and again, a process of the session exchanges run.sh with a link to /etc (renameat2
// RENAME_EXCHANGE). The rules must never follow the name (the finding: a rule on "/", the folder of /etc, then the
// script reads the host).
func TestLandlockAttackCommandSwap(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: the worst case")
	need(t, confine.Supported() == nil, "a kernel with Landlock ABI 6 and seccomp")
	secret := filepath.Join(hostSecret(t), "secret")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ws := filepath.Join(store, "sessions", "s1", "workspace")
	require.NoError(t, os.WriteFile(filepath.Join(ws, "run.sh"), []byte("#!/bin/sh\ncat "+secret+" 2>/dev/null\necho ran\n"), 0o755))
	require.NoError(t, os.Symlink("/etc", filepath.Join(ws, "swap")))

	stop := make(chan struct{})
	var swaps atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		dir, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return
		}
		defer unix.Close(dir)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if unix.Renameat2(dir, "run.sh", dir, "swap", unix.RENAME_EXCHANGE) == nil {
				swaps.Add(1)
			}
		}
	}()
	defer func() { close(stop); <-done }()

	const maxRuns = 200
	runs, ran, leaked := 0, 0, 0
	for runs < maxRuns && leaked == 0 {
		runs++
		r := cliIn(t, store, ws, nil, "exec", "s1", "--landlock", "--", "./run.sh")
		if strings.Contains(r.stdout, "ran") {
			ran++
		}
		if strings.Contains(r.stdout, hostMarker) {
			leaked = runs
		}
	}
	t.Logf("%d runs (%d ran the script), %d swaps; host secret read at run %d (0: never)", runs, ran, swaps.Load(), leaked)
	assert.Zero(t, leaked, "a swapped name widened the command's rules: the host's secret was read")
	assert.NotZero(t, ran, "the script never ran: the race proved nothing")
}

// TestLandlockAttackUnixSockets: a stream socket in a folder of the host (standing in for /var/run/docker.sock),
// an abstract one, and a datagram one (standing in for /dev/log) are listening, made by the test outside the
// sandbox. The command must reach none of them.
func TestLandlockAttackUnixSockets(t *testing.T) {
	dir := t.TempDir()
	docker := filepath.Join(dir, "docker.sock")
	abstract := fmt.Sprintf("@sessionfs-e2e-%d", os.Getpid())
	var answered atomic.Int64
	for _, addr := range []string{docker, abstract} {
		l, err := net.Listen("unix", addr)
		require.NoError(t, err)
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				answered.Add(1)
				fmt.Fprintln(c, "the daemon answers")
				c.Close()
			}
		}()
	}
	log := filepath.Join(dir, "log")
	dg, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: log, Net: "unixgram"})
	require.NoError(t, err)
	t.Cleanup(func() { dg.Close() })

	eachLandlockPath(t, func(t *testing.T, lt landlockTarget) {
		attacker := lt.attacker(t)
		before := answered.Load()
		r := lt.landlocked(t, []string{"-e", "SESSIONFS_E2E_ATTACK=connect", "-e", "ATTACK_STREAM=" + docker + "," + abstract,
			"-e", "ATTACK_DGRAM=" + log}, attacker)
		t.Logf("the attacker: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		require.Equal(t, 0, r.code, r.stderr)
		assert.NotContains(t, r.stdout, "answers", "a socket outside the sandbox answered")
		assert.Equal(t, before, answered.Load(), "a connection reached a listener outside the sandbox")
		// Nothing queued at the datagram socket: a read that does not wait finds nothing.
		raw, err := dg.SyscallConn()
		require.NoError(t, err)
		var n int
		var rerr error
		require.NoError(t, raw.Control(func(fd uintptr) {
			n, _, rerr = unix.Recvfrom(int(fd), make([]byte, 64), unix.MSG_DONTWAIT)
		}))
		assert.ErrorIs(t, rerr, unix.EAGAIN, "a datagram reached the socket outside the sandbox (%d bytes)", n)
	})
}

// TestLandlockAttackTIOCSTI: the command's stdin is a real terminal, its controlling one (where the kernel lets
// any process push input without a capability); it pushes "echo PWNED" into it, which the shell that ran
// sessionfs would read and run once it returns. Nothing may arrive in the terminal's input.
func TestLandlockAttackTIOCSTI(t *testing.T) {
	eachLandlockPath(t, func(t *testing.T, lt landlockTarget) {
		attacker := lt.attacker(t)
		master, slave := openPty(t)
		defer master.Close()
		defer slave.Close()
		cmd := exec.Command(bin, "exec", "s1", "--landlock", "-e", "SESSIONFS_E2E_ATTACK=tiocsti", "-e",
			"ATTACK_TEXT=echo PWNED\n", "--", attacker)
		cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+lt.store)
		cmd.Stdin = slave
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		t.Logf("the attacker: %v\n%s%s", err, out.String(), errb.String())
		require.NoError(t, err)
		queued, err := unix.IoctlGetInt(int(slave.Fd()), unix.TIOCINQ)
		require.NoError(t, err)
		assert.Zero(t, queued, "bytes were pushed into the terminal's input")
		assert.Contains(t, out.String(), "pushed 0 bytes", "the attacker reports its pushes")
	})
}

// openPty opens a new pseudo-terminal pair, neither end the test's controlling terminal.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	require.NoError(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	return m, s
}

// TestLandlockAttackSignal: the command kills a process outside its sandbox (a sleep the test started, as root:
// in the finding, the mount's daemon). It must live on.
func TestLandlockAttackSignal(t *testing.T) {
	eachLandlockPath(t, func(t *testing.T, lt landlockTarget) {
		sleep := exec.Command("sleep", "600")
		require.NoError(t, sleep.Start())
		defer func() { _ = sleep.Process.Kill(); _ = sleep.Wait() }()
		pid := sleep.Process.Pid
		r := lt.landlocked(t, nil, "sh", "-c", fmt.Sprintf("kill -9 %d; echo kill: $?", pid))
		t.Logf("exit %d: %s%s", r.code, r.stdout, r.stderr)
		var ws unix.WaitStatus
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		require.NoError(t, err)
		assert.Zero(t, got, "the process outside the sandbox was killed (%v)", ws)
		assert.Contains(t, r.stdout, "kill: 1")
	})
}

// TestLandlockAttackWideRules: rules that would open what the sandbox is for are refused with a usage error
// (exit 125) before anything runs: "/", $HOME, the store, a link to "/" planted in the session, another
// session's folder; and a command run from $HOME is granted that file, not $HOME.
func TestLandlockAttackWideRules(t *testing.T) {
	eachLandlockPath(t, func(t *testing.T, lt landlockTarget) {
		ok(t, lt.store, "new", "s2")
		other := filepath.Join(lt.store, "sessions", "s2", "workspace")
		require.NoError(t, os.WriteFile(filepath.Join(other, "f"), []byte(hostMarker), 0o600))
		home := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(home, "secret"), []byte(hostMarker), 0o600))
		link := filepath.Join(lt.session, "workspace", "root")
		require.NoError(t, os.Symlink("/", link))
		env := []string{"HOME=" + home}
		for what, flags := range map[string][]string{
			"/":                      {"--allow-read", "/"},
			"$HOME":                  {"--allow-read", home},
			"the store":              {"--allow", lt.store},
			"the store's parent":     {"--allow-read", filepath.Dir(lt.store)},
			"a link to / planted":    {"--allow-read", link},
			"another session's work": {"--allow-read", other},
		} {
			args := append(append([]string{"exec", "s1", "--landlock"}, flags...), "--", "sh", "-c",
				"cat "+filepath.Join(other, "f")+" "+filepath.Join(home, "secret"))
			r := cliIn(t, lt.store, "", env, args...)
			t.Logf("%s: exit %d: %s", what, r.code, strings.TrimSpace(r.stderr))
			assert.Equal(t, 125, r.code, what)
			assert.NotContains(t, r.stdout, hostMarker, what)
			assert.Regexp(t, "covers|outside the run's session", r.stderr, what)
		}

		// A script in $HOME runs, and reads nothing else there.
		script := filepath.Join(home, "x.sh")
		require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho ran\ncat "+filepath.Join(home, "secret")+"\n"), 0o700))
		r := cliIn(t, lt.store, "", env, "exec", "s1", "--landlock", "--", script)
		t.Logf("~/x.sh: exit %d: %s %s", r.code, r.stdout, strings.TrimSpace(r.stderr))
		assert.Contains(t, r.stdout, "ran")
		assert.NotContains(t, r.stdout, hostMarker, "running ~/x.sh opened $HOME")
	})
}
