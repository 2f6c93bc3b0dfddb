package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
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

// attackTakeover takes the caller's terminal over after the run (the review's finding): it ignores SIGTTOU,
// SIGTTIN and SIGHUP, starts a child and exits; the child (attackTakeoverChild) outlives it.
func attackTakeover() int {
	signal.Ignore(syscall.SIGTTOU, syscall.SIGTTIN, syscall.SIGHUP)
	self, err := os.Executable()
	if err != nil {
		fmt.Printf("fork: %v\n", err)
		return 1
	}
	child := exec.Command(self)
	child.Env = append(os.Environ(), "SESSIONFS_E2E_ATTACK=takeover-child", fmt.Sprintf("ATTACK_PARENT=%d", os.Getpid()))
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := child.Start(); err != nil {
		fmt.Printf("fork: %v\n", err)
		return 1
	}
	fmt.Println("forked")
	return 0
}

// attackTakeoverChild waits for its parent (the command) to end and for the shell to take its terminal back,
// makes its own process group the terminal's foreground again (tcsetpgrp), and reads the next line the user
// types into the shell, into "stolen". Each step is reported in "took", in its working folder.
func attackTakeoverChild() int {
	report := func(format string, a ...any) {
		if f, err := os.OpenFile("took", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err == nil {
			fmt.Fprintf(f, format+"\n", a...)
			f.Close()
		}
	}
	parent, _ := strconv.Atoi(os.Getenv("ATTACK_PARENT"))
	deadline := time.Now().Add(30 * time.Second) // an attacker that lost gives up
	for os.Getppid() == parent {
		if time.Now().After(deadline) {
			report("the command never ended")
			return 1
		}
		time.Sleep(5 * time.Millisecond)
	}
	for {
		pgrp, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
		if err == nil && pgrp != unix.Getpgrp() {
			break // the shell has its terminal back
		}
		if time.Now().After(deadline) {
			report("the shell never took its terminal back (%v)", err)
			return 1
		}
		time.Sleep(5 * time.Millisecond)
	}
	err := unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, unix.Getpgrp())
	report("tcsetpgrp: %v", err)
	if err != nil {
		return 1
	}
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	_ = os.WriteFile("stolen", []byte(line), 0o644)
	report("read %q: %v", line, err)
	return 0
}

// TestLandlockAttackTerminalTakeover: the command, run by a shell in the foreground of its terminal, leaves a
// process behind that takes the terminal over once the shell has it back (tcsetpgrp), and reads what the user
// types next into the shell (a password). Nothing of the sandbox may outlive the run, and the shell must read
// the line. As root on the store and through the mount, and as a normal user.
func TestLandlockAttackTerminalTakeover(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	attack := func(t *testing.T, lt landlockTarget, uid int, env ...string) {
		attacker := lt.attacker(t)
		ws := filepath.Join(lt.session, "workspace")
		master, slave := openPty(t)
		defer master.Close()
		defer slave.Close()
		if uid != 0 {
			require.NoError(t, os.Chown(slave.Name(), uid, uid))
		}
		reportR, reportW, err := os.Pipe()
		require.NoError(t, err)
		defer reportR.Close()
		gateR, gateW, err := os.Pipe()
		require.NoError(t, err)
		defer gateW.Close()
		shell := exec.Command(self, bin, "exec", "s1", "--landlock", "-e", "SESSIONFS_E2E_ATTACK=takeover", "--", attacker)
		shell.Env = append(append(os.Environ(), "SESSIONFS_E2E_ATTACK=shell", "SESSIONFS_STORE="+lt.store), env...)
		if uid != 0 {
			shell.Env = append(shell.Env, fmt.Sprintf("ATTACK_JOB_UID=%d", uid))
		}
		shell.Stdin, shell.Stdout, shell.Stderr = slave, slave, slave
		shell.ExtraFiles = []*os.File{reportW, gateR}
		shell.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		require.NoError(t, shell.Start())
		reportW.Close()
		gateR.Close()
		defer func() { _ = shell.Process.Kill(); _ = shell.Wait() }()
		screen := &syncBuffer{}
		go func() { _, _ = io.Copy(screen, eioReader{master}) }()
		reports := bufio.NewReader(reportR)
		next := func() string {
			line, err := reports.ReadString('\n')
			require.NoError(t, err, "the shell stopped reporting; the terminal shows %q", screen.String())
			return strings.TrimSpace(line)
		}
		t.Logf("the job: %s; %s; the shell: %s", next(), next(), next())
		left := processesWithEnv("SESSIONFS_E2E_ATTACK=takeover-child")
		defer killAll(left)
		took := filepath.Join(ws, "took")
		if len(left) > 0 { // it lives on: let it do its worst before the user types
			waitFor(func() bool { b, _ := os.ReadFile(took); return len(b) > 0 })
		}
		_, err = fmt.Fprintln(gateW, "read")
		require.NoError(t, err)
		_, err = master.WriteString("hunter2\n")
		require.NoError(t, err)
		read := next()
		if len(left) > 0 {
			waitFor(func() bool { _, err := os.Stat(filepath.Join(ws, "stolen")); return err == nil })
		}
		reported, _ := os.ReadFile(took)
		stolen, _ := os.ReadFile(filepath.Join(ws, "stolen"))
		t.Logf("processes of the sandbox left after the run: %v; they reported %q and read %q; the shell: %s", left,
			reported, stolen, read)
		assert.Empty(t, left, "a process of the sandbox outlived the run")
		assert.Equal(t, `read "hunter2\n" <nil>`, read, "the shell read what the user typed")
		assert.NotContains(t, string(stolen), "hunter2", "the sandbox read what the user typed into the shell")
	}
	t.Run("as root", func(t *testing.T) {
		eachLandlockPath(t, func(t *testing.T, lt landlockTarget) { attack(t, lt, 0) })
	})
	t.Run("as a normal user", func(t *testing.T) {
		needUserSandbox(t)
		u := newUserStore(t)
		attack(t, landlockTarget{store: u.store, session: u.session}, 65534, "HOME="+u.home)
	})
}

// attackTcsetpgrp, in a process group of its own, makes it its terminal's foreground (tcsetpgrp, as a shell
// does for its jobs), steals the terminal as its controlling one (TIOCSCTTY 1) and takes the console's output
// (TIOCCONS), reporting each.
func attackTcsetpgrp() int {
	signal.Ignore(syscall.SIGTTOU, syscall.SIGTTIN)
	fmt.Printf("setpgid: %v\n", unix.Setpgid(0, 0))
	fmt.Printf("tcsetpgrp: %v\n", unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, unix.Getpgrp()))
	pgrp, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	fmt.Printf("foreground: %v (%v)\n", err == nil && pgrp == unix.Getpgrp(), err)
	fmt.Printf("steal: %v\n", unix.IoctlSetInt(0, unix.TIOCSCTTY, 1))
	fmt.Printf("console: %v\n", unix.IoctlSetInt(0, unix.TIOCCONS, 0))
	return 0
}

// TestLandlockTerminalGivenBack: the command, run by a shell in the foreground of its terminal, makes a process
// group of its own the terminal's foreground (as a shell inside does for its jobs: allowed, its PID namespace
// names its own groups alone) and ends. The caller's job must have the terminal again when the run ends (a
// group left in the foreground, gone, stopped the caller's next read), and the terminal may be neither stolen
// (TIOCSCTTY 1) nor made the console's (TIOCCONS).
func TestLandlockTerminalGivenBack(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	eachLandlockPath(t, func(t *testing.T, lt landlockTarget) {
		attacker := lt.attacker(t)
		master, slave := openPty(t)
		defer master.Close()
		defer slave.Close()
		reportR, reportW, err := os.Pipe()
		require.NoError(t, err)
		defer reportR.Close()
		gateR, gateW, err := os.Pipe()
		require.NoError(t, err)
		shell := exec.Command(self, bin, "exec", "s1", "--landlock", "-e", "SESSIONFS_E2E_ATTACK=tcsetpgrp", "--", attacker)
		shell.Env = append(os.Environ(), "SESSIONFS_E2E_ATTACK=shell", "SESSIONFS_STORE="+lt.store)
		shell.Stdin, shell.Stdout, shell.Stderr = slave, slave, slave
		shell.ExtraFiles = []*os.File{reportW, gateR}
		shell.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		require.NoError(t, shell.Start())
		reportW.Close()
		gateR.Close()
		gateW.Close() // the shell reads no line after the job
		defer func() { _ = shell.Process.Kill(); _ = shell.Wait() }()
		screen := &syncBuffer{}
		go func() { _, _ = io.Copy(screen, eioReader{master}) }()
		reports, err := io.ReadAll(reportR)
		require.NoError(t, err)
		t.Logf("the shell: %s", reports)
		assert.Contains(t, string(reports), "exited <nil>")
		assert.Contains(t, string(reports), "foreground after the job: the job's group")
		require.NoError(t, shell.Wait())
		eventually(t, 10*time.Second, func() bool { return strings.Contains(screen.String(), "console: ") }, "the terminal shows %q", screen.String())
		out := screen.String()
		t.Logf("the command: %s", out)
		assert.Contains(t, out, "tcsetpgrp: <nil>", "its own group may be the foreground")
		assert.Contains(t, out, "steal: operation not permitted")
		assert.Contains(t, out, "console: operation not permitted")
	})
}

// attackSocketpair makes a socketpair of each type of ATTACK_TYPES (with SOCK_CLOEXEC) and, for each made, sends
// a datagram from it to ATTACK_DGRAM (a socket's path outside the sandbox).
func attackSocketpair() int {
	for _, v := range strings.Split(os.Getenv("ATTACK_TYPES"), ",") {
		typ, err := strconv.ParseInt(v, 0, 32)
		if err != nil {
			fmt.Printf("type %s: %v\n", v, err)
			continue
		}
		fds, err := unix.Socketpair(unix.AF_UNIX, int(typ)|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			fmt.Printf("type %#x: socketpair: %v\n", typ, err)
			continue
		}
		err = unix.Sendto(fds[0], []byte("spoofed\n"), unix.MSG_DONTWAIT, &unix.SockaddrUnix{Name: os.Getenv("ATTACK_DGRAM")})
		fmt.Printf("type %#x: socketpair: <nil>, sendto: %v\n", typ, err)
		unix.Close(fds[0])
		unix.Close(fds[1])
	}
	return 0
}

// TestLandlockAttackSocketpairTypes: socketpair(AF_UNIX, SOCK_RAW) passed the filter (it refused SOCK_DGRAM
// alone), and the kernel makes a datagram pair of it, which may send to any datagram socket by its path (/dev/log,
// systemd's notify socket; here one the test listens on). Only stream and seqpacket pairs may be made, with or
// without SOCK_NONBLOCK.
func TestLandlockAttackSocketpairTypes(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	dg, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: log, Net: "unixgram"})
	require.NoError(t, err)
	t.Cleanup(func() { dg.Close() })
	refused := []int{unix.SOCK_RAW, unix.SOCK_DGRAM, unix.SOCK_DGRAM | unix.SOCK_NONBLOCK, unix.SOCK_RDM, 9}
	allowed := []int{unix.SOCK_STREAM, unix.SOCK_SEQPACKET, unix.SOCK_STREAM | unix.SOCK_NONBLOCK}
	var types []string
	for _, typ := range append(slices.Clone(refused), allowed...) {
		types = append(types, fmt.Sprintf("%#x", typ))
	}
	eachLandlockPath(t, func(t *testing.T, lt landlockTarget) {
		attacker := lt.attacker(t)
		r := lt.landlocked(t, []string{"-e", "SESSIONFS_E2E_ATTACK=socketpair", "-e", "ATTACK_TYPES=" + strings.Join(types, ","),
			"-e", "ATTACK_DGRAM=" + log}, attacker)
		t.Logf("the attacker: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		require.Equal(t, 0, r.code, r.stderr)
		for _, typ := range refused {
			assert.Contains(t, r.stdout, fmt.Sprintf("type %#x: socketpair: permission denied", typ))
		}
		for _, typ := range allowed {
			assert.Contains(t, r.stdout, fmt.Sprintf("type %#x: socketpair: <nil>", typ), "stream and seqpacket pairs work")
		}
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

// attackThief is the second review's thief: it starts attackThiefChild and waits for it.
func attackThief() int {
	self, err := os.Executable()
	if err != nil {
		fmt.Printf("fork: %v\n", err)
		return 1
	}
	child := exec.Command(self)
	child.Env = append(os.Environ(), "SESSIONFS_E2E_ATTACK=thief-child", fmt.Sprintf("ATTACK_PARENT=%d", os.Getpid()))
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := child.Run(); err != nil {
		fmt.Printf("thief: %v\n", err)
	}
	return 0
}

// attackThiefChild ignores the terminal's job-control signals and SIGHUP, leaves its parent's process group
// (still in its terminal's session), and, with ATTACK_WAIT=stop, waits until its parent is stopped (the user's
// Ctrl-Z: the shell takes its terminal back); then makes its own group the terminal's foreground (tcsetpgrp) and
// reads what is typed next, into "stolen" in its working folder, each step reported in "took". An attacker that
// lost gives up: it reads for a few seconds at most, then ends its parent, and so the run.
func attackThiefChild() int {
	report := func(format string, a ...any) {
		if f, err := os.OpenFile("took", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err == nil {
			fmt.Fprintf(f, format+"\n", a...)
			f.Close()
		}
	}
	signal.Ignore(syscall.SIGTTOU, syscall.SIGTTIN, syscall.SIGHUP, syscall.SIGTSTP)
	report("setpgid: %v", unix.Setpgid(0, 0))
	parent, _ := strconv.Atoi(os.Getenv("ATTACK_PARENT"))
	defer func() { _ = unix.Kill(parent, unix.SIGKILL) }()
	fmt.Println("thief is " + "waiting") // not as typed on the command line
	if os.Getenv("ATTACK_WAIT") == "stop" {
		stopped := func() bool {
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", parent))
			i := bytes.LastIndexByte(stat, ')')
			return err == nil && i > 0 && i+2 < len(stat) && stat[i+2] == 'T'
		}
		for deadline := time.Now().Add(5 * time.Second); !stopped(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				report("the parent was never stopped")
				return 1
			}
		}
		report("the parent is stopped")
	}
	report("tcsetpgrp: %v", unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, unix.Getpgrp()))
	var line []byte
	buf := make([]byte, 256)
	for deadline := time.Now().Add(3 * time.Second); !bytes.Contains(line, []byte("\n")); {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		fds := []unix.PollFd{{Fd: 0, Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, int(left.Milliseconds())+1); err != nil || n == 0 {
			continue
		}
		n, err := unix.Read(0, buf)
		if n <= 0 || err != nil {
			report("read: %d %v", n, err)
			break
		}
		line = append(line, buf[:n]...)
	}
	_ = os.WriteFile("stolen", line, 0o644)
	report("read %q", line)
	return 0
}

// TestLandlockAttackSuspendTakeover: the second review's finding, with a real interactive bash on a real pty.
// The sandboxed command forks a thief that ignores SIGTTOU, SIGTTIN, SIGHUP and SIGTSTP and leaves its process
// group; the user presses Ctrl-Z (before the fix bash printed "Stopped" and its prompt), the thief makes its
// group the terminal's foreground and reads the user's next line. And the run started in the background (&),
// where the thief takes the terminal at once. Bash must read the line the user types at its prompt, and the
// thief must not. As root on the store and through the mount.
func TestLandlockAttackSuspendTakeover(t *testing.T) {
	bash, err := exec.LookPath("bash")
	need(t, err == nil, "bash")
	attack := func(t *testing.T, lt landlockTarget, background bool) {
		attacker := lt.attacker(t)
		ws := filepath.Join(lt.session, "workspace")
		for _, f := range []string{"took", "stolen"} {
			require.NoError(t, os.RemoveAll(filepath.Join(ws, f)))
		}
		master, slave := openPty(t)
		defer master.Close()
		mark := fmt.Sprintf("SESSIONFS_E2E_RUN=%d-%d", os.Getpid(), runMarks.Add(1))
		sh := exec.Command(bash, "--norc", "--noprofile", "-i")
		sh.Env = append(os.Environ(), "PS1=PROMPT> ", "SESSIONFS_STORE="+lt.store, mark)
		sh.Stdin, sh.Stdout, sh.Stderr = slave, slave, slave
		sh.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		require.NoError(t, sh.Start())
		slave.Close()
		defer func() {
			killAll(processesWithEnv(mark))
			_ = sh.Process.Kill()
			_ = sh.Wait()
		}()
		screen := &syncBuffer{}
		go func() { _, _ = io.Copy(screen, eioReader{master}) }()
		prompts := func() int { return strings.Count(screen.String(), "PROMPT> ") }
		eventually(t, 20*time.Second, func() bool { return prompts() >= 1 }, "no prompt: the terminal shows %q", screen)
		line := fmt.Sprintf("%s exec s1 --landlock -e SESSIONFS_E2E_ATTACK=thief -e ATTACK_WAIT=stop -- %s", bin, attacker)
		if background {
			line = fmt.Sprintf("%s exec s1 --landlock -e SESSIONFS_E2E_ATTACK=thief -- %s &", bin, attacker)
		}
		_, err := master.WriteString(line + "\n")
		require.NoError(t, err)
		took := func() string { b, _ := os.ReadFile(filepath.Join(ws, "took")); return string(b) }
		shown := prompts()
		if background {
			// It takes the terminal at once: the user types at the prompt bash printed after the job's number.
			eventually(t, 30*time.Second, func() bool { return strings.Contains(took(), "tcsetpgrp: ") }, "the thief never ran")
		} else {
			eventually(t, 30*time.Second, func() bool { return strings.Contains(screen.String(), "thief is waiting") },
				"the thief never ran: the terminal shows %q", screen)
			_, err = master.WriteString("\x1a") // Ctrl-Z
			require.NoError(t, err)
			// The user types at bash's prompt: once the run is suspended (before the fix), or has ended (the
			// thief, never stopped, gives up); and the thief has done its worst.
			eventually(t, 30*time.Second, func() bool { return prompts() > shown }, "no prompt again: the terminal shows %q", screen)
			eventually(t, 30*time.Second, func() bool {
				return strings.Contains(took(), "tcsetpgrp: ") || strings.Contains(took(), "never stopped")
			},
				"the thief never reported")
		}
		_, err = master.WriteString("echo got-$((6*7))-secret-1\n")
		require.NoError(t, err)
		bashRead := waitFor(func() bool { return strings.Contains(screen.String(), "got-42-secret-1") })
		if background { // the thief that lost gives up: its report is complete
			waitFor(func() bool { return strings.Contains(took(), "read ") })
		}
		stolen, _ := os.ReadFile(filepath.Join(ws, "stolen"))
		t.Logf("the thief reported %q and read %q; the terminal shows %q", took(), stolen, screen)
		assert.True(t, bashRead, "bash did not read the line the user typed at its prompt")
		assert.NotContains(t, string(stolen), "secret-1", "the sandbox read what the user typed into the shell")
	}
	eachLandlockPath(t, func(t *testing.T, lt landlockTarget) {
		t.Run("ctrl-z", func(t *testing.T) { attack(t, lt, false) })
		t.Run("background", func(t *testing.T) { attack(t, lt, true) })
	})
}
