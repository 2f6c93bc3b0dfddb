package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/confine"
)

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

// fakeShell is a login shell on its terminal (fds 0-2, its controlling one): it runs os.Args[1:] as a job in
// the foreground (as uid ATTACK_JOB_UID when set), takes the terminal back when the job ends, and reads the next
// line typed, as a shell does. It reports each step on fd 3, and reads once fd 4 says so (not at all when fd 4
// is closed).
func fakeShell() int {
	report, gate := os.NewFile(3, "report"), os.NewFile(4, "gate")
	unix.CloseOnExec(3)
	unix.CloseOnExec(4)
	job := exec.Command(os.Args[1], os.Args[2:]...)
	job.Stdin, job.Stdout, job.Stderr = os.Stdin, os.Stdout, os.Stderr
	job.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: 0}
	if uid, err := strconv.Atoi(os.Getenv("ATTACK_JOB_UID")); err == nil {
		job.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}
	}
	if err := job.Start(); err != nil {
		fmt.Fprintf(report, "exited %v\n", err)
		return 1
	}
	// As a shell: job control's signals do not stop it (set after the job's exec, which would inherit them).
	signal.Ignore(syscall.SIGTTOU, syscall.SIGTTIN)
	fmt.Fprintf(report, "exited %v\n", job.Wait())
	switch pgrp, err := unix.IoctlGetInt(0, unix.TIOCGPGRP); {
	case err != nil:
		fmt.Fprintf(report, "foreground after the job: %v\n", err)
	case pgrp == job.Process.Pid:
		fmt.Fprintln(report, "foreground after the job: the job's group")
	case unix.Kill(-pgrp, 0) == unix.ESRCH:
		fmt.Fprintln(report, "foreground after the job: a group that is gone")
	default:
		fmt.Fprintf(report, "foreground after the job: group %d\n", pgrp)
	}
	fmt.Fprintf(report, "foreground again: %v\n", unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, unix.Getpgrp()))
	if _, err := bufio.NewReader(gate).ReadString('\n'); err != nil {
		return 0 // no line to read: the test closed the gate
	}
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	fmt.Fprintf(report, "read %q %v\n", line, err)
	return 0
}

// processesWithEnv are the processes of the host whose environment holds kv.
func processesWithEnv(kv string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if bytes.Contains(append([]byte{0}, env...), []byte("\x00"+kv+"\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killAll kills the processes pids (what an attack left behind).
func killAll(pids []int) {
	for _, pid := range pids {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
}

// waitFor waits a bounded time for cond (what an attacker that outlived its run does next); false if it never
// held.
func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}

// userStore is a store of uid 65534's with session s1, run by that user (the store under /tmp: the tests' own
// folders are root's alone).
type userStore struct {
	store, session, home string
}

func newUserStore(t *testing.T) userStore {
	t.Helper()
	base, err := os.MkdirTemp("/tmp", "sessionfs-landlock-user-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	u := userStore{store: filepath.Join(base, "store"), home: filepath.Join(base, "home")}
	for _, d := range []string{base, u.store, u.home} {
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.Chown(d, 65534, 65534))
	}
	r := runResult(t, u.command(bin, "new", "s1"))
	require.Equal(t, 0, r.code, r.stderr)
	u.session = filepath.Join(u.store, "sessions", "s1")
	return u
}

// command is argv run as uid 65534 with the user's store and home.
func (u userStore) command(argv ...string) *exec.Cmd {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+u.store, "HOME="+u.home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	return cmd
}

// needUserSandbox: a normal user's --landlock run needs root to set it up here, and the kernel's sandbox.
func needUserSandbox(t *testing.T) {
	t.Helper()
	need(t, os.Geteuid() == 0, "root: to switch to a normal user")
	need(t, confine.Supported() == nil, "a kernel with Landlock ABI 6 and seccomp")
}

// eioReader reads a pty's master until the other side is closed (EIO).
type eioReader struct{ f *os.File }

func (r eioReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	if errors.Is(err, unix.EIO) {
		return n, io.EOF
	}
	return n, err
}

// runMarks tells the processes of one run apart (processesWithEnv finds them by it).
var runMarks atomic.Int64
