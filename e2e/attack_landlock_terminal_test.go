package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The attacks of issue 36 on exec --landlock through a terminal (attack_landlock_test.go has the others): the
// command must neither type into its caller's terminal, nor take it over once its run ends, nor read or write
// another terminal of the host.

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

// TestLandlockAttackOtherTerminal: another terminal of the host (a pty the test opens, standing for an admin's
// login; owned by root, or by the user for a normal user's run) holds what was typed in it. The sandboxed command
// must neither read that input (`head -c 12 /dev/pts/N`) nor write a fake prompt into it. As root on the store
// and through the mount, and as a normal user on its store (a user namespace).
func TestLandlockAttackOtherTerminal(t *testing.T) {
	attack := func(t *testing.T, owner int, run func(script string) result) {
		master, slave := openPty(t)
		defer master.Close()
		defer slave.Close()
		if owner != 0 {
			require.NoError(t, os.Chown(slave.Name(), owner, owner))
		}
		typed := "typed-secret\n"
		_, err := master.WriteString(typed)
		require.NoError(t, err)
		r := run(fmt.Sprintf("head -c 12 %[1]s; echo; echo read: $?; printf FAKE-PROMPT > %[1]s; echo write: $?", slave.Name()))
		t.Logf("the attack on %s: exit %d\n%s%s", slave.Name(), r.code, r.stdout, r.stderr)
		assert.NotContains(t, r.stdout, "typed-secret", "the sandbox read what was typed in another terminal")
		fd := int(master.Fd()) // once: Fd puts the file back in blocking mode
		require.NoError(t, unix.SetNonblock(fd, true))
		shown, _ := io.ReadAll(io.LimitReader(nonblockReader(fd), 1<<16))
		t.Logf("the terminal shows %q", shown)
		assert.NotContains(t, string(shown), "FAKE-PROMPT", "the sandbox wrote into another terminal")
		queued, err := unix.IoctlGetInt(int(slave.Fd()), unix.TIOCINQ)
		require.NoError(t, err)
		assert.Equal(t, len(typed), queued, "the typed input is there still, unread")
	}
	t.Run("as root", func(t *testing.T) {
		eachLandlockPath(t, func(t *testing.T, lt landlockTarget) {
			attack(t, 0, func(script string) result { return lt.landlocked(t, nil, "sh", "-c", script) })
		})
	})
	t.Run("as a normal user", func(t *testing.T) {
		needUserSandbox(t)
		u := newUserStore(t)
		attack(t, 65534, func(script string) result {
			return runResult(t, u.command(bin, "exec", "s1", "--landlock", "--", "sh", "-c", script))
		})
	})
}

// nonblockReader reads a non-blocking descriptor until it has nothing more (EAGAIN is its end).
type nonblockReader int

func (r nonblockReader) Read(p []byte) (int, error) {
	n, err := unix.Read(int(r), p)
	if err == unix.EAGAIN || err == unix.EIO || (err == nil && n == 0) {
		return 0, io.EOF
	}
	if err != nil {
		return 0, err
	}
	return n, nil
}
