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
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/confine"
	"github.com/sessionfs/sessionfs/e2e/apistub"
)

// exec --landlock as its user sees it: what the sandbox grants and refuses, its terminals, signals and exit codes,
// and the processes it ends with the run. The attacks on it are attack_landlock_test.go's and
// attack_landlock_terminal_test.go's.

// TestLandlockedExec: with --landlock, a command exec starts, run as root (DAC checks pass it everywhere), may
// work in its session and read the system, and the kernel refuses it the rest: a root-only file, another
// session (in the store and through the mount), a link it plants to lead out, the store itself, /tmp. Without
// --landlock the same command reaches them, so the test would see a confinement that does nothing. On the store
// itself and through the mount (where the run has a mount namespace of binds).
func TestLandlockedExec(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: the command must be refused what root may otherwise read")
	need(t, confine.ABI() >= 1, "a kernel with Landlock")
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("host secret"), 0o600))
	readable := filepath.Join(t.TempDir(), "tools")
	require.NoError(t, os.Mkdir(readable, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(readable, "tool"), []byte("a tool"), 0o644))

	for _, mounted := range []bool{false, true} {
		name := "on the store"
		if mounted {
			name = "through the mount"
		}
		t.Run(name, func(t *testing.T) {
			store := t.TempDir()
			ok(t, store, "new", "s1")
			ok(t, store, "new", "s2")
			other := filepath.Join(store, "sessions", "s2", "workspace", "f")
			if mounted {
				m := mount(t, store)
				other = filepath.Join(m.mnt, "sessions", "s2", "workspace", "f")
			}
			require.NoError(t, os.WriteFile(other, []byte("another session's"), 0o644))
			sh := func(landlock bool, script string, extra ...string) result {
				args := []string{"exec", "s1"}
				if landlock {
					args = append(append(args, "--landlock"), extra...)
				}
				return cli(t, store, append(args, "--", "sh", "-c", script)...)
			}

			// Unconfined, the command reaches everything root reaches.
			r := sh(false, "cat "+secret+" "+other+"; grep -c '^root:' /etc/shadow")
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, "host secretanother session's1\n", r.stdout)

			// Its own work goes on: files, folders, links, renames, git, its TMPDIR.
			r = sh(true, `set -e; echo x > f; mkdir -p d; mv f d/g; ln -s d/g l; cat l; git init -q repo;
				echo t > "$TMPDIR/t"; cat "$TMPDIR/t"; cat /etc/hostname /etc/passwd > /dev/null; ls /etc > /dev/null; id -un > /dev/null`)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, "x\nt\n", r.stdout)

			// The rest is refused, to root.
			for what, script := range map[string]string{
				"a root-only file":           "cat " + secret,
				"another session":            "cat " + other,
				"a link planted to lead out": "ln -sf " + secret + " out && cat out",
				"the store":                  "ls " + filepath.Join(store, "sessions"),
				"/tmp":                       "echo x > /tmp/sessionfs-landlock-escape",
				"/etc's secrets":             "cat /etc/shadow",
			} {
				r := sh(true, script)
				assert.NotEqual(t, 0, r.code, "%s: %s", what, r.stdout)
				assert.Contains(t, r.stderr, "Permission denied", what)
				assert.NotContains(t, r.stdout, "host secret", what)
			}
			assert.NoFileExists(t, "/tmp/sessionfs-landlock-escape")

			// What the user allows, it may read.
			r = sh(true, "cat "+filepath.Join(readable, "tool"), "--allow-read", readable)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, "a tool", r.stdout)
		})
	}
}

// TestLandlockedClaude: the real claude CLI works under --landlock through the mount, offline against the stub:
// its state is the session's, the rest it does not need.
func TestLandlockedClaude(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: the mount's binds")
	need(t, confine.ABI() >= 1, "a kernel with Landlock")
	forEachClaude(t, func(t *testing.T, c claudeCLI) {
		api := stub(t, "127.0.0.1:0")
		store := t.TempDir()
		ok(t, store, "new", "s1")
		mount(t, store)
		cmd := exec.Command(bin, "exec", "s1", "--landlock", "--", c.path, "-p", "hello under landlock")
		cmd.Env = append(claudeEnv(t, api.URL), "SESSIONFS_STORE="+store)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), apistub.Reply)
		r := cli(t, store, "show", "s1", "--json")
		assert.Contains(t, r.stdout, "hello under landlock", "the conversation is the session's")
	})
}

// makePty does what node-pty does (gemini's and qwen's CLIs): opens /dev/ptmx and the /dev/pts/N it names, and
// talks through the pair; then lists /dev/pts.
func makePty() int {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		fmt.Printf("pty: %v\n", err)
		return 1
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		fmt.Printf("pty: unlock: %v\n", err)
		return 1
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		fmt.Printf("pty: number: %v\n", err)
		return 1
	}
	name := "/dev/pts/" + strconv.Itoa(int(n))
	s, err := os.OpenFile(name, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		fmt.Printf("pty: %v\n", err)
		return 1
	}
	if _, err := s.WriteString("ping\n"); err != nil {
		fmt.Printf("pty: write: %v\n", err)
		return 1
	}
	// The echo may come in more than one read (CI once read "ping", then "\r\n"): read to its line's end.
	buf := make([]byte, 16)
	got := 0
	for got < len(buf) && !bytes.Contains(buf[:got], []byte("\n")) {
		n, err := m.Read(buf[got:])
		if err != nil {
			fmt.Printf("pty: read: %v\n", err)
			return 1
		}
		got += n
	}
	fmt.Printf("pty %s echoed %q\n", name, buf[:got])
	ents, err := os.ReadDir("/dev/pts")
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	fmt.Printf("/dev/pts lists %s (%v)\n", strings.Join(names, " "), err)
	return 0
}

// withoutNamespaces runs its arguments where no namespace can be made, as in a container under Docker's default
// seccomp profile or on a host with user namespaces turned off: unshare and a clone into a new user or mount
// namespace fail with EPERM (clone3, whose flags a filter cannot read, with ENOSYS: callers fall back to clone).
func withoutNamespaces() int {
	os.Unsetenv("SESSIONFS_E2E_SANDBOX")
	ret := func(v uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: v} }
	jeq := func(v uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: v, Jt: jt, Jf: jf}
	}
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // the call's number
		jeq(unix.SYS_UNSHARE, 0, 1),
		ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)),
		jeq(unix.SYS_CLONE3, 0, 1),
		ret(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)),
		jeq(unix.SYS_CLONE, 0, 3),
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 16}, // its flags (low word)
		{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: unix.CLONE_NEWUSER | unix.CLONE_NEWNS, Jt: 0, Jf: 1},
		ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)),
		ret(unix.SECCOMP_RET_ALLOW),
	}
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "no_new_privs:", err)
		return 2
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&fprog))); e != 0 {
		fmt.Fprintln(os.Stderr, "seccomp:", e)
		return 2
	}
	err := unix.Exec(os.Args[1], os.Args[1:], os.Environ())
	fmt.Fprintln(os.Stderr, "exec:", err)
	return 2
}

// TestLandlockTerminals: what the private /dev/pts must keep working. The command's stdin, stdout and controlling
// terminal are the run's own pty, relayed to the caller's terminal: writes to stdout and to /dev/tty reach it; and a pty made inside the
// sandbox as node-pty makes it works, and is the only terminal /dev/pts lists.
func TestLandlockTerminals(t *testing.T) {
	check := func(t *testing.T, cmd *exec.Cmd, attacker string) {
		cmd.Args = append(cmd.Args, "sh", "-c", "echo via-stdout; echo via-tty > /dev/tty; exec "+attacker)
		cmd.Env = append(cmd.Env, "SESSIONFS_E2E_SANDBOX=pty")
		master, slave := openPty(t)
		defer master.Close()
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.Setsid, cmd.SysProcAttr.Setctty, cmd.SysProcAttr.Ctty = true, true, 0
		require.NoError(t, cmd.Start())
		slave.Close() // the master reads EIO once the command's side is all closed
		var out bytes.Buffer
		_, _ = io.Copy(&out, eioReader{master})
		err := cmd.Wait()
		t.Logf("the command on its terminal: %v\n%s", err, out.String())
		require.NoError(t, err)
		assert.Contains(t, out.String(), "via-stdout")
		assert.Contains(t, out.String(), "via-tty")
		assert.Regexp(t, `pty /dev/pts/(\d+) echoed "ping\\r\\n"`, out.String())
		if m := regexp.MustCompile(`pty /dev/pts/(\d+) echoed`).FindStringSubmatch(out.String()); m != nil {
			assert.Contains(t, out.String(), "/dev/pts lists "+m[1]+" ptmx (<nil>)", "only its own terminal")
		}
	}
	t.Run("as root", func(t *testing.T) {
		eachLandlockPath(t, func(t *testing.T, lt landlockTarget) {
			cmd := exec.Command(bin, "exec", "s1", "--landlock", "--")
			cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+lt.store)
			check(t, cmd, lt.attacker(t))
		})
	})
	t.Run("as a normal user", func(t *testing.T) {
		needUserSandbox(t)
		u := newUserStore(t)
		attacker := landlockTarget{store: u.store, session: u.session}.attacker(t)
		check(t, u.command(bin, "exec", "s1", "--landlock", "--"), attacker)
	})
}

// TestLandlockNeedsANamespace: where no mount namespace can be made (a container's seccomp profile, user
// namespaces turned off), --landlock refuses to run (exit 125, naming what is missing) instead of running
// without the namespace its promise rests on. Without --landlock the run goes on, on the mount.
func TestLandlockNeedsANamespace(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	refused := func(t *testing.T, cmd *exec.Cmd) {
		cmd.Env = append(cmd.Env, "SESSIONFS_E2E_SANDBOX=nons")
		r := runResult(t, cmd)
		t.Logf("exit %d: %s%s", r.code, r.stdout, r.stderr)
		assert.Equal(t, 125, r.code)
		assert.NotContains(t, r.stdout, "ran")
		assert.Contains(t, r.stderr, "namespace")
	}
	t.Run("as root", func(t *testing.T) {
		eachLandlockPath(t, func(t *testing.T, lt landlockTarget) {
			cmd := exec.Command(self, bin, "exec", "s1", "--landlock", "--", "echo", "ran")
			cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+lt.store)
			refused(t, cmd)
			cmd = exec.Command(self, bin, "exec", "s1", "--", "echo", "ran")
			cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+lt.store, "SESSIONFS_E2E_SANDBOX=nons")
			r := runResult(t, cmd)
			assert.Equal(t, "ran\n", r.stdout, "without --landlock: %s", r.stderr)
		})
	})
	t.Run("as a normal user", func(t *testing.T) {
		needUserSandbox(t)
		u := newUserStore(t)
		// The test binary, where the user may run it.
		wrapper := filepath.Join(u.home, "nons")
		b, err := os.ReadFile(self)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(wrapper, b, 0o755))
		refused(t, u.command(wrapper, bin, "exec", "s1", "--landlock", "--", "echo", "ran"))
	})
}

// reportSignals prints "started", then "got <signal>" for each signal it gets, until SIGTERM (exit 143).
func reportSignals() int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGWINCH)
	fmt.Println("started")
	for sig := range sigs {
		fmt.Printf("got %v\n", sig)
		if sig == syscall.SIGTERM {
			return 143
		}
	}
	return 0
}

// TestLandlockSignals: the sandbox's init (the command's parent in its PID namespace) changes nothing of what a
// shell's user sees: each signal sent to sessionfs reaches the command once, a terminal's Ctrl-C, Ctrl-\ and
// resize reach it once (not again through the init), and exit codes are the command's (128+signal when a signal
// ended it). As root on the store and through the mount, and as a normal user.
func TestLandlockSignals(t *testing.T) {
	sent := func(t *testing.T, cmd *exec.Cmd) {
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		lines := bufio.NewReader(stdout)
		expect := func(want string) {
			line, err := lines.ReadString('\n')
			require.NoError(t, err)
			assert.Equal(t, want+"\n", line)
		}
		expect("started")
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGTERM} {
			require.NoError(t, cmd.Process.Signal(sig))
			expect("got " + sig.String()) // the next line: a second copy of the one before would be here
		}
		rest, _ := io.ReadAll(lines)
		assert.Empty(t, string(rest))
		err = cmd.Wait()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		assert.Equal(t, 143, exit.ExitCode(), "the command's exit code")
	}
	typed := func(t *testing.T, cmd *exec.Cmd) {
		master, slave := openPty(t)
		defer master.Close()
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		require.NoError(t, cmd.Start())
		slave.Close()
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		lines := bufio.NewReader(eioReader{master})
		var seen []string
		next := func() string {
			for {
				line, err := lines.ReadString('\n')
				require.NoError(t, err, "the terminal showed %q", seen)
				seen = append(seen, line)
				if !strings.Contains(line, "warning") { // the CLI's note on a store not mounted
					return line
				}
			}
		}
		assert.Contains(t, next(), "started")
		for _, k := range []struct {
			do   func() error
			want string
		}{
			{func() error { _, err := master.WriteString("\x03"); return err }, "got interrupt"}, // Ctrl-C
			{func() error { _, err := master.WriteString("\x1c"); return err }, "got quit"},      // Ctrl-\
			{func() error {
				return unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 100})
			}, "got window changed"},
			{func() error { return cmd.Process.Signal(syscall.SIGTERM) }, "got terminated"},
		} {
			require.NoError(t, k.do())
			assert.Contains(t, next(), k.want, "the next line (a second copy of the one before would be here)")
		}
		err := cmd.Wait()
		rest, _ := io.ReadAll(lines)
		t.Logf("the terminal showed %q, then %q", seen, rest)
		assert.NotContains(t, string(rest), "got ")
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		assert.Equal(t, 143, exit.ExitCode(), "the command's exit code")
	}
	codes := func(t *testing.T, run func(script string) result) {
		for script, want := range map[string]int{"exit 3": 3, "kill -9 $$": 137, "kill -TERM $$": 143, "true": 0} {
			r := run(script)
			assert.Equal(t, want, r.code, "%s: %s", script, r.stderr)
		}
	}
	t.Run("as root", func(t *testing.T) {
		eachLandlockPath(t, func(t *testing.T, lt landlockTarget) {
			attacker := lt.attacker(t)
			command := func() *exec.Cmd {
				cmd := exec.Command(bin, "exec", "s1", "--landlock", "-e", "SESSIONFS_E2E_SANDBOX=signals", "--", attacker)
				cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+lt.store)
				return cmd
			}
			t.Run("sent to sessionfs", func(t *testing.T) { sent(t, command()) })
			t.Run("typed on its terminal", func(t *testing.T) { typed(t, command()) })
			codes(t, func(script string) result { return lt.landlocked(t, nil, "sh", "-c", script) })
		})
	})
	t.Run("as a normal user", func(t *testing.T) {
		needUserSandbox(t)
		u := newUserStore(t)
		attacker := landlockTarget{store: u.store, session: u.session}.attacker(t)
		sent(t, u.command(bin, "exec", "s1", "--landlock", "-e", "SESSIONFS_E2E_SANDBOX=signals", "--", attacker))
		codes(t, func(script string) result {
			return runResult(t, u.command(bin, "exec", "s1", "--landlock", "--", "sh", "-c", script))
		})
	})
}

// TestLandlockRunEndsItsProcesses: nothing the sandboxed command starts outlives its run: not a process it
// leaves behind in a session of its own (setsid), nor the command itself when sessionfs is killed (SIGKILL, where
// no relay can tell it). As root on the store and through the mount, and as a normal user.
func TestLandlockRunEndsItsProcesses(t *testing.T) {
	check := func(t *testing.T, command func(args ...string) *exec.Cmd) {
		mark := fmt.Sprintf("SESSIONFS_E2E_RUN=%d-%d", os.Getpid(), runMarks.Add(1))
		sh := func(script string) *exec.Cmd {
			return command("exec", "s1", "--landlock", "-e", mark, "--", "sh", "-c", script)
		}
		r := runResult(t, sh("setsid sleep 600 </dev/null >/dev/null 2>&1 & echo started"))
		require.Equal(t, 0, r.code, r.stderr)
		left := processesWithEnv(mark)
		t.Logf("left behind after the run: %v", left)
		killAll(left)
		assert.Empty(t, left, "a process of the sandbox outlived the run")

		cmd := sh("echo started; sleep 600 </dev/null >/dev/null 2>&1; :")
		startUntil(t, cmd, "started\n")
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()
		gone := waitFor(func() bool { return len(processesWithEnv(mark)) == 0 })
		left = processesWithEnv(mark)
		t.Logf("left behind once sessionfs was killed: %v", left)
		killAll(left)
		assert.True(t, gone, "the sandbox lived on after sessionfs was killed")
	}
	t.Run("as root", func(t *testing.T) {
		eachLandlockPath(t, func(t *testing.T, lt landlockTarget) {
			check(t, func(args ...string) *exec.Cmd {
				cmd := exec.Command(bin, args...)
				cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+lt.store)
				return cmd
			})
		})
	})
	t.Run("as a normal user", func(t *testing.T) {
		needUserSandbox(t)
		u := newUserStore(t)
		check(t, func(args ...string) *exec.Cmd { return u.command(append([]string{bin}, args...)...) })
	})
}

// TestLandlockNodePty: node-pty (gemini's and qwen's CLIs run their shell commands through it) still works under
// --landlock: forkpty gives the child the pty it made as its controlling terminal (TIOCSCTTY 0), which the
// sandbox lets through while it refuses stealing another session's terminal.
func TestLandlockNodePty(t *testing.T) {
	node, err := exec.LookPath("node")
	need(t, err == nil, "node")
	found, _ := filepath.Glob(filepath.Join(".cache", "*", "node_modules", "@lydell", "node-pty"))
	need(t, len(found) > 0, "node-pty in e2e/.cache (qwen's or gemini's install: make agents)")
	modules, err := filepath.Abs(filepath.Dir(filepath.Dir(found[0])))
	require.NoError(t, err)
	eachLandlockPath(t, func(t *testing.T, lt landlockTarget) {
		js := `const p = require(process.env.NODE_PTY).spawn('/bin/sh', ['-c', 'echo pty-ok'], {cols: 80, rows: 24});
let out = ''; p.onData(d => { out += d; }); p.onExit(e => console.log(JSON.stringify(out), 'exit', e.exitCode));`
		require.NoError(t, os.WriteFile(filepath.Join(lt.session, "workspace", "pty.js"), []byte(js), 0o644))
		r := lt.landlocked(t, []string{"--allow-read", modules, "-e", "NODE_PTY=" + filepath.Join(modules, "@lydell", "node-pty")},
			node, "pty.js")
		t.Logf("node-pty: exit %d: %s%s", r.code, r.stdout, r.stderr)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, `"pty-ok\r\n" exit 0`+"\n", r.stdout)
	})
}

// TestLandlockInteractiveShell: an interactive shell runs in the sandbox on its pty, relayed to the caller's
// terminal, with job control: its prompt, a command, a job that reads the terminal, exit. (Refused tcsetpgrp, bash hung: from its
// PID namespace it cannot see the caller's process group, makes its own, and stops itself with SIGTTIN until
// that is the terminal's foreground.) As root on the store and through the mount, and as a normal user.
func TestLandlockInteractiveShell(t *testing.T) {
	bash, err := exec.LookPath("bash")
	need(t, err == nil, "bash")
	check := func(t *testing.T, cmd *exec.Cmd) {
		cmd.Args = append(cmd.Args, bash, "--norc", "--noprofile", "-i")
		cmd.Env = append(cmd.Env, "PS1=PROMPT> ")
		master, slave := openPty(t)
		defer master.Close()
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.Setsid, cmd.SysProcAttr.Setctty, cmd.SysProcAttr.Ctty = true, true, 0
		require.NoError(t, cmd.Start())
		slave.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// A shell that hangs fails the test rather than the suite.
		stuck := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
		defer stuck.Stop()
		var screen []byte
		until := func(want string) {
			buf := make([]byte, 4096)
			for !bytes.Contains(screen, []byte(want)) {
				n, err := master.Read(buf)
				screen = append(screen, buf[:n]...)
				require.NoError(t, err, "waiting for %q, the terminal shows %q", want, screen)
			}
		}
		typeLine := func(line string) {
			_, err := master.WriteString(line + "\n")
			require.NoError(t, err)
		}
		until("PROMPT> ")
		typeLine("echo inside-$((6*7))")
		until("inside-42")
		typeLine("sed -n 's/^/job-read-/p;q'")
		typeLine("typed")
		until("job-read-typed")
		typeLine("exit 7")
		err := <-done
		rest, _ := io.ReadAll(eioReader{master})
		t.Logf("the terminal showed %q%q", screen, rest)
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		assert.Equal(t, 7, exit.ExitCode(), "the shell's exit code")
	}
	t.Run("as root", func(t *testing.T) {
		eachLandlockPath(t, func(t *testing.T, lt landlockTarget) {
			cmd := exec.Command(bin, "exec", "s1", "--landlock", "--")
			cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+lt.store)
			check(t, cmd)
		})
	})
	t.Run("as a normal user", func(t *testing.T) {
		needUserSandbox(t)
		u := newUserStore(t)
		check(t, u.command(bin, "exec", "s1", "--landlock", "--"))
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
