package e2e

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/internal/selfexec"
)

// Finding 11 of issue 36: a slip in the confined serving process's code (here injected with ptrace into the real
// process, under its own seccomp filter, Landlock and capabilities) typed "touch PROOF" into the admin's terminal,
// fds 0-2 of a root mount run in the foreground, with TIOCSTI, and the admin's shell ran it as root. The mount runs
// as a shell's job does: on a terminal (a pty) that is its stdin, stdout, stderr and controlling terminal. What the
// slip types must never reach the terminal's input; Ctrl-C at the terminal still unmounts, and the log lines still
// reach it.
func TestAttackDaemonTypesIntoTerminal(t *testing.T) {
	need(t, os.Geteuid() == 0, "the confined serving process is root's (a normal user's mount is served by one unprivileged process)")
	need(t, canInject, "injecting a call into the serving process needs x86-64")
	needFUSE(t)
	master, terminal := openTerminal(t)
	store, mnt := t.TempDir(), filepath.Join(t.TempDir(), "mnt")
	cmd := exec.Command(bin, "mount", "--verbose", mnt)
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = terminal, terminal, terminal
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	require.NoError(t, cmd.Start())
	// Waited for only once the injections are over: a wait of this process (the mount's parent, and the
	// tracer) would take the traced thread's stops, which are the tracer's (an unrelayed mount serves itself).
	var exited chan struct{}
	var exit error
	wait := func() <-chan struct{} {
		if exited == nil {
			exited = make(chan struct{})
			go func() { exit = cmd.Wait(); close(exited) }()
		}
		return exited
	}
	screen := &syncBuffer{}
	go func() { _, _ = io.Copy(screen, master) }() // what the terminal shows
	t.Cleanup(func() {
		select {
		case <-wait():
		default:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-wait():
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-wait()
			}
		}
		if isFUSEMount(mnt) || staleMount(mnt) {
			_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
	})
	eventually(t, 10*time.Second, func() bool {
		return strings.Contains(screen.String(), "sessionfs: serving ") && isFUSEMount(mnt) && !staleMount(mnt)
	}, "the mount did not come up: %s", screen)
	pid := servingPID(t, mnt)
	t.Logf("serving process %d; the mount command %d", pid, cmd.Process.Pid)

	// The slip: ioctl(fd, TIOCSTI, c) for each byte of the command, on fds 0, 1 and 2 of the serving process.
	const proof = "touch PROOF\n"
	results := map[int]string{}
	for fd := 0; fd <= 2; fd++ {
		for _, c := range []byte(proof) {
			errno, err := injectIoctl(pid, fd, unix.TIOCSTI, []byte{c})
			require.NoError(t, err, "inject TIOCSTI into %d", pid)
			results[fd] = "ok"
			if errno != 0 {
				results[fd] = errno.Error()
			}
		}
	}
	t.Logf("TIOCSTI made by the serving process on its fds 0, 1, 2: %v", results)
	typed := ""
	if queued, err := unix.IoctlGetInt(int(terminal.Fd()), unix.TIOCINQ); err == nil && queued > 0 {
		buf := make([]byte, queued)
		n, _ := terminal.Read(buf)
		typed = string(buf[:n])
	}
	assert.Empty(t, typed, "typed into the terminal, for the admin's shell to run as root")

	// The serving process holds no terminal, and has no controlling one.
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	require.NoError(t, err)
	for _, fd := range fds {
		target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		assert.False(t, strings.HasPrefix(target, "/dev/pts/") || strings.HasPrefix(target, "/dev/tty"), "fd %s is %s", fd.Name(), target)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	_, rest, _ := strings.Cut(string(stat), ") ")
	assert.Equal(t, "0", strings.Fields(rest)[4], "tty_nr: the serving process's controlling terminal")

	// It serves on, and Ctrl-C at the terminal unmounts, as before.
	require.NoError(t, os.Mkdir(filepath.Join(mnt, "sessions", "after"), 0o755))
	_, err = master.Write([]byte{3})
	require.NoError(t, err)
	select {
	case <-wait():
		assert.NoError(t, exit, "the mount's exit after Ctrl-C: %s", screen)
	case <-time.After(30 * time.Second):
		t.Fatalf("Ctrl-C did not stop the mount: %s", screen)
	}
	assert.False(t, isFUSEMount(mnt), "unmounted")
	assert.Contains(t, screen.String(), "the serving process is confined", "the log reaches the terminal")
}

// openTerminal opens a pseudo-terminal: its master, and its slave with line editing and echo off (each byte typed
// into it is counted as it arrives); both close when the test ends.
func openTerminal(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	master = os.NewFile(uintptr(m), "ptmx")
	t.Cleanup(func() { master.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetUint32(m, unix.TIOCGPTN)
	require.NoError(t, err)
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { slave.Close() })
	tios, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	require.NoError(t, err)
	tios.Lflag &^= unix.ICANON | unix.ECHO // ISIG stays: Ctrl-C is an interrupt
	require.NoError(t, unix.IoctlSetTermios(int(slave.Fd()), unix.TCSETS, tios))
	return master, slave
}

// doctor found the serving process of a root mount by its command line (a process named "<any> <helper's role>
// <mnt>", the helper, whose parent it took), which any user can choose. uid 65534 starts one beside a root mount
// served unconfined (--confine off), under the helper's role and under the name a build before gives it: doctor
// must name the process the kernel shows holding the mount's FUSE connection, and say it is unconfined, not vouch
// for the attacker's process.
func TestAttackFakeHelperFoolsDoctor(t *testing.T) {
	need(t, os.Geteuid() == 0, "a root mount, and a process of uid 65534 beside it")
	m := mount(t, t.TempDir(), "--confine", "off")
	for _, role := range append([]string{selfexec.Helper}, selfexec.Before(selfexec.Helper)...) {
		t.Run(role, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "fake-helper-")
			require.NoError(t, err)
			t.Cleanup(func() { os.RemoveAll(dir) })
			require.NoError(t, os.Chmod(dir, 0o755))
			// bash runs the script named as the role, keeping the command line it was started with: x <role> <mnt>.
			require.NoError(t, os.WriteFile(filepath.Join(dir, role), []byte("echo ready\nread -r _\n"), 0o644))
			fake := exec.Command("setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "bash", "-c",
				`cd "$1" && (exec -a x bash "$3" "$2"); :`, "attacker", dir, m.mnt, role)
			hold, err := fake.StdinPipe()
			require.NoError(t, err)
			startUntil(t, fake, "ready\n")
			t.Cleanup(func() { hold.Close(); _ = fake.Wait() })
			attacker := fake.Process.Pid // the fake helper's parent: the process the command line pointed doctor at

			r := cli(t, m.store, "doctor")
			line := regexp.MustCompile(`(?m)^\S+\s+confine\s+.*$`).FindString(r.stdout)
			t.Logf("doctor: %s", line)
			assert.Regexp(t, fmt.Sprintf(`^WARN\s+confine\s+serving process %d of %s: seccomp none; .*served unconfined`,
				m.cmd.Process.Pid, regexp.QuoteMeta(m.mnt)), line)
			assert.NotContains(t, line, fmt.Sprintf("process %d ", attacker), "doctor vouches for the attacker's process")
		})
	}
}

// fsIocSetFSLabel is FS_IOC_SETFSLABEL, _IOW(0x94, 50, char[256]) in the asm-generic encoding (x86-64, arm64):
// it renames the filesystem a file is on, for a caller holding CAP_SYS_ADMIN.
const fsIocSetFSLabel = 0x41009432

// helperRelabel makes HELPER_PATH and asks, through it, that its filesystem be renamed "pwned": it prints "ok" or
// the error.
func helperRelabel() int {
	path := os.Getenv("HELPER_PATH")
	if err := os.WriteFile(path, []byte("{}\n"), 0o644); err != nil {
		fmt.Println(err)
		return 1
	}
	f, err := os.Open(path)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer f.Close()
	var label [256]byte
	copy(label[:], "pwned")
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), fsIocSetFSLabel, uintptr(unsafe.Pointer(&label[0]))); errno != 0 {
		fmt.Println(errno)
		return 0
	}
	fmt.Println("ok")
	return 0
}

// A caller's ioctl on a file of the mount reaches the daemon as a FUSE request, and go-fuse repeats it on the
// store's file: with the serving process's capabilities, SYS_ADMIN among them. A session's process (uid 65534, on
// an --allow-other mount, in a file of its own session) asks for the store's filesystem to be renamed: ext4
// obliges whoever holds SYS_ADMIN (and as readily shuts the filesystem down: EXT4_IOC_SHUTDOWN). The store is a
// filesystem of its own here (a loop device), whose label must not change: confined (the seccomp filter refuses
// the request) and with --confine off (the mount's nodes repeat no such request: mount/nodes/ioctl.go).
func TestAttackSessionIoctlWithDaemonsCapabilities(t *testing.T) {
	need(t, os.Geteuid() == 0, "the confined serving process is root's, and the loop-mounted store is made by root")
	need(t, runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64", "FS_IOC_SETFSLABEL's number is asm-generic's")
	_, mkfsErr := exec.LookPath("mkfs.ext4")
	_, labelErr := exec.LookPath("e2label")
	need(t, mkfsErr == nil && labelErr == nil, "mkfs.ext4 and e2label (e2fsprogs)")
	t.Run("confined", func(t *testing.T) { relabelThroughMount(t) })
	t.Run("unconfined", func(t *testing.T) { relabelThroughMount(t, "--confine", "off") })
}

// relabelThroughMount runs the relabel attack against a mount made with extra flags.
func relabelThroughMount(t *testing.T, extra ...string) {
	dir := t.TempDir()
	img, store := filepath.Join(dir, "store.img"), filepath.Join(dir, "store")
	require.NoError(t, os.Mkdir(store, 0o755))
	require.NoError(t, os.WriteFile(img, nil, 0o600))
	require.NoError(t, os.Truncate(img, 32<<20))
	out, err := exec.Command("mkfs.ext4", "-q", "-L", "sessions", img).CombinedOutput()
	require.NoError(t, err, "%s", out)
	dev, err := exec.Command("losetup", "--find", "--show", img).Output()
	need(t, err == nil, fmt.Sprintf("a loop device: %v", err))
	loop := strings.TrimSpace(string(dev))
	t.Cleanup(func() { _ = exec.Command("losetup", "--detach", loop).Run() })
	require.NoError(t, syscall.Mount(loop, store, "ext4", 0, ""))
	t.Cleanup(func() { _ = syscall.Unmount(store, syscall.MNT_DETACH) }) // after the sessionfs mount's own cleanup
	label := func() string {
		out, err := exec.Command("e2label", loop).Output()
		require.NoError(t, err)
		return strings.TrimSpace(string(out))
	}
	require.Equal(t, "sessions", label())

	m := mount(t, store, append([]string{"--allow-other"}, extra...)...)
	openUp(t, m.mnt)
	s := m.session("s")
	require.NoError(t, os.Mkdir(s, 0o755))
	require.NoError(t, os.Chmod(filepath.Join(s, ".claude"), 0o777)) // the session's own folder, its process's to write
	attacker := exec.Command(exeForOthers(t))
	attacker.Env = append(os.Environ(), "SESSIONFS_E2E_HELPER=relabel", "HELPER_PATH="+filepath.Join(s, ".claude", "mine.json"))
	attacker.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	said, err := attacker.CombinedOutput()
	require.NoError(t, err, "%s", said)
	t.Logf("FS_IOC_SETFSLABEL through the mount, as uid 65534: %s; the store's label: %s", strings.TrimSpace(string(said)), label())
	assert.Equal(t, "sessions", label(), "the store's filesystem renamed by a session's process")
	assert.True(t, isFUSEMount(m.mnt) && !staleMount(m.mnt), "still serving")
}

// TestAttackHelperFollowsHostileMount: the privileged helper of a confined mount walks nothing the serving daemon
// answers. A test build of the daemon lies as a compromised one would (mount/nodes/fault_on.go, op hostile): a bound
// session's folder is answered as a symlink to a host folder that holds a mount named workspace (another mount's
// bind, a CSI pod's). The helper then releases that session's binds (--max-binds 1, two more sessions made).
// Before, it unmounted <mnt>/sessions/<id>/workspace by path, followed the link, and unmounted the host's mount.
func TestAttackHelperFollowsHostileMount(t *testing.T) {
	need(t, os.Geteuid() == 0, "the helper of a confined mount is root's")
	exe := faultBuild(t)

	host := t.TempDir()
	hostMount := filepath.Join(host, "workspace")
	require.NoError(t, os.Mkdir(hostMount, 0o755))
	require.NoError(t, unix.Mount("tmpfs", hostMount, "tmpfs", 0, ""))
	t.Cleanup(func() { _ = unix.Unmount(hostMount, unix.MNT_DETACH) })
	require.NoError(t, os.WriteFile(filepath.Join(hostMount, "host-file"), []byte("host\n"), 0o644))

	store := t.TempDir()
	ok(t, store, "new", "a")
	m := mountWith(t, exe, store, "--max-binds", "1")
	bound := func(id string) func() bool {
		return func() bool {
			for _, e := range mountsUnder(t, m.mnt) {
				if e.point == filepath.Join(m.session(id), "workspace") {
					return true
				}
			}
			return false
		}
	}
	eventually(t, 10*time.Second, bound("a"), "session a is bound (the recently active ones are, at start)")

	_, err := os.Lstat(filepath.Join(m.mnt, "sessions", faultPrefix+"hostile-a="+url.PathEscape(host)))
	require.ErrorIs(t, err, syscall.EEXIST, "the daemon lies about session a from now on")
	eventually(t, 10*time.Second, func() bool {
		st, err := os.Lstat(m.session("a"))
		return err == nil && st.Mode()&os.ModeSymlink != 0
	}, "the kernel meets the lie: sessions/a is a link to the host folder")

	// A new session is bound at once (the watcher sees it), which releases a; the next one, bound by the same
	// worker after that release, shows it is over.
	ok(t, store, "new", "b")
	eventually(t, 10*time.Second, bound("b"), "session b is bound")
	ok(t, store, "new", "c")
	eventually(t, 10*time.Second, bound("c"), "session c is bound")
	mounted := false
	for _, e := range mountsUnder(t, host) {
		mounted = mounted || e.point == hostMount
	}
	assert.True(t, mounted, "the host's mount named workspace is still mounted")
	b, err := os.ReadFile(filepath.Join(hostMount, "host-file"))
	require.NoError(t, err)
	assert.Equal(t, "host\n", string(b))
}
