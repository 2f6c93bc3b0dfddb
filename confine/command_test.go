package confine

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// onThrowawayThread runs fn on a thread of its own that ends with it: what fn restricts (seccomp, capabilities)
// dies with that thread, and the test process keeps what it had.
func onThrowawayThread(fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		fn()
	}()
	<-done
}

func rawErrno(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// TestCommandFilter: the filter refuses the terminal's injecting ioctls (their high bits set too) and those that
// take a terminal over (a stolen controlling terminal, the console), unix sockets but stream and
// seqpacket socketpairs, and io_uring, and lets the rest through; with Landlock's resolve-unix right (ABI 9)
// unix sockets are Landlock's to refuse.
func TestCommandFilter(t *testing.T) {
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	defer ptmx.Close()
	ioctl := func(req uint64) error {
		var c byte = 'x'
		_, _, e := unix.Syscall(unix.SYS_IOCTL, ptmx.Fd(), uintptr(req), uintptr(unsafe.Pointer(&c)))
		return rawErrno(e)
	}
	// On a file that is no terminal the kernel answers ENOTTY: an EPERM is the filter's.
	null, err := os.Open("/dev/null")
	require.NoError(t, err)
	defer null.Close()
	ioctlNull := func(req, arg uint64) error {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, null.Fd(), uintptr(req), uintptr(arg))
		return rawErrno(e)
	}
	socket := func(domain, typ int) error {
		fd, err := unix.Socket(domain, typ|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}
	pair := func(typ int) error {
		fds, err := unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
		}
		return err
	}
	for _, abi := range []int{7, resolveUnixABI} {
		prog, err := commandFilter(abi)
		require.NoError(t, err)
		onThrowawayThread(func() {
			if !assert.NoError(t, unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) || !assert.NoError(t, loadThreadFilter(prog)) {
				return
			}
			for _, req := range []uint64{unix.TIOCSTI, unix.TIOCSTI | 1<<32, unix.TIOCLINUX, unix.TIOCSETD, unix.TIOCSETD | 0xffff_0000_0000_0000} {
				assert.ErrorIs(t, ioctl(req), unix.EPERM, "ioctl %#x", req)
			}
			for _, req := range []uint64{unix.TIOCCONS, unix.TIOCCONS | 1<<32} {
				assert.ErrorIs(t, ioctlNull(req, 0), unix.EPERM, "ioctl %#x", req)
			}
			assert.ErrorIs(t, ioctlNull(unix.TIOCSPGRP, 0), unix.ENOTTY, "TIOCSPGRP (a shell's job control) passes")
			assert.ErrorIs(t, ioctlNull(unix.TIOCSCTTY, 1), unix.EPERM, "TIOCSCTTY stealing a terminal")
			assert.ErrorIs(t, ioctlNull(unix.TIOCSCTTY, 1<<32|1), unix.EPERM, "TIOCSCTTY stealing, high bits set")
			assert.ErrorIs(t, ioctlNull(unix.TIOCSCTTY, 0), unix.ENOTTY, "TIOCSCTTY 0 (forkpty's) passes to the kernel")
			assert.ErrorIs(t, ioctlNull(unix.TIOCSCTTY, 1<<32), unix.ENOTTY, "the kernel reads TIOCSCTTY's argument as an int")
			assert.ErrorIs(t, ioctlNull(unix.TIOCNOTTY, 0), unix.ENOTTY, "TIOCNOTTY passes")
			_, err := unix.IoctlGetWinsize(int(ptmx.Fd()), unix.TIOCGWINSZ)
			assert.NoError(t, err, "other ioctls pass")
			assert.NoError(t, socket(unix.AF_INET, unix.SOCK_STREAM), "other sockets pass")
			for _, typ := range []int{unix.SOCK_STREAM, unix.SOCK_SEQPACKET, unix.SOCK_STREAM | unix.SOCK_NONBLOCK, unix.SOCK_SEQPACKET | unix.SOCK_NONBLOCK} {
				assert.NoError(t, pair(typ), "a socketpair of type %#x passes", typ)
			}
			_, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, 0, 0)
			assert.ErrorIs(t, rawErrno(e), unix.ENOSYS, "io_uring")
			if abi < resolveUnixABI {
				assert.ErrorIs(t, socket(unix.AF_UNIX, unix.SOCK_STREAM), unix.EACCES, "ABI %d: socket(AF_UNIX)", abi)
				assert.ErrorIs(t, socket(unix.AF_UNIX, unix.SOCK_DGRAM), unix.EACCES, "ABI %d: socket(AF_UNIX)", abi)
				for _, typ := range []int{unix.SOCK_DGRAM, unix.SOCK_DGRAM | unix.SOCK_NONBLOCK, unix.SOCK_RAW, unix.SOCK_RDM, 9, unix.SOCK_PACKET, unix.SOCK_STREAM | 0x100} {
					assert.ErrorIs(t, pair(typ), unix.EACCES, "ABI %d: a socketpair of type %#x", abi, typ)
				}
			} else {
				assert.NoError(t, socket(unix.AF_UNIX, unix.SOCK_STREAM), "ABI %d: Landlock governs unix sockets", abi)
				assert.NoError(t, pair(unix.SOCK_DGRAM), "ABI %d: Landlock governs unix sockets", abi)
			}
		})
	}
	// The filter was the throwaway thread's alone.
	assert.NoError(t, socket(unix.AF_UNIX, unix.SOCK_STREAM))
}

// TestDropAllCaps: a thread left with no capability in any set, the bounding set included when it held SETPCAP.
func TestDropAllCaps(t *testing.T) {
	setpcap, err := holds(unix.CAP_SETPCAP)
	require.NoError(t, err)
	onThrowawayThread(func() {
		if !assert.NoError(t, dropAllCaps()) {
			return
		}
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var d [2]unix.CapUserData
		assert.NoError(t, unix.Capget(&hdr, &d[0]))
		assert.Equal(t, [2]unix.CapUserData{}, d)
		if setpcap {
			for v := 0; v <= unix.CAP_LAST_CAP; v++ {
				on, err := inBound(v)
				assert.NoError(t, err)
				assert.False(t, on, "capability %d left in the bounding set", v)
			}
			bits, err := unix.PrctlRetInt(unix.PR_GET_SECUREBITS, 0, 0, 0, 0)
			assert.NoError(t, err)
			assert.Equal(t, commandSecurebits, bits&commandSecurebits, "securebits")
		}
	})
}

// TestGuard: rules that cover "/", $HOME, the store or the mount are refused, whatever name leads there (a link,
// a bind mount); with the run's session known, so are rules in the store outside it.
func TestGuard(t *testing.T) {
	top := t.TempDir()
	home := filepath.Join(top, "home")
	store := filepath.Join(top, "home", "store")
	for _, d := range []string{"sessions/s1/workspace", "sessions/s2/workspace"} {
		require.NoError(t, os.MkdirAll(filepath.Join(store, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions/s2/workspace/f"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions/s1/workspace/f"), nil, 0o644))
	elsewhere := filepath.Join(top, "tools")
	require.NoError(t, os.Mkdir(elsewhere, 0o755))
	require.NoError(t, os.Symlink("/", filepath.Join(store, "sessions/s1/workspace/root")))

	check := func(g *guard, p string) error {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		defer unix.Close(fd)
		return g.check(p, fd)
	}
	g, err := newGuard(Command{Home: home, Store: store})
	require.NoError(t, err)
	assert.ErrorContains(t, check(g, "/"), "covers /")
	assert.ErrorContains(t, check(g, top), "covers $HOME")
	assert.ErrorContains(t, check(g, home), "covers $HOME")
	assert.ErrorContains(t, check(g, store), "covers the store")
	assert.ErrorContains(t, check(g, filepath.Join(store, "sessions/s1/workspace/root")), "covers /", "a link to /")
	assert.NoError(t, check(g, elsewhere))
	assert.NoError(t, check(g, filepath.Join(store, "sessions/s2/workspace")), "no session known: only covering is checked")

	g, err = newGuard(Command{Home: home, Store: store, Session: []string{filepath.Join(store, "sessions/s1")}})
	require.NoError(t, err)
	assert.NoError(t, check(g, filepath.Join(store, "sessions/s1")))
	assert.NoError(t, check(g, filepath.Join(store, "sessions/s1/workspace")))
	assert.NoError(t, check(g, filepath.Join(store, "sessions/s1/workspace/f")))
	assert.NoError(t, check(g, elsewhere))
	assert.ErrorContains(t, check(g, filepath.Join(store, "sessions/s2/workspace")), "outside the run's session")
	assert.ErrorContains(t, check(g, filepath.Join(store, "sessions/s2/workspace/f")), "outside the run's session")
	assert.ErrorContains(t, check(g, filepath.Join(store, "sessions")), "outside the run's session")

	// A bind mount of the store's folder is the same folder to Landlock: refused by identity, not by name.
	if os.Geteuid() == 0 {
		alias := filepath.Join(top, "alias")
		require.NoError(t, os.Mkdir(alias, 0o755))
		if err := unix.Mount(home, alias, "", unix.MS_BIND, ""); err != nil {
			t.Logf("no bind mount to check (%v)", err)
			return
		}
		defer unix.Unmount(alias, unix.MNT_DETACH)
		assert.ErrorContains(t, check(g, alias), "covers $HOME", "a bind of $HOME")
		assert.ErrorContains(t, check(g, filepath.Join(alias, "store/sessions/s2/workspace")), "outside the run's session",
			"another session through a bind")
	}
}

func TestNamedInside(t *testing.T) {
	c := Command{Session: []string{"/mnt/sessions/s1", "/store/sessions/s1"}, Store: "/store", Mount: "/mnt"}
	for name, inside := range map[string]bool{
		"./run.sh":                         true,
		"bin/tool":                         true,
		"../../../usr/bin/x":               true, // relative: from the cwd, in the session
		"/mnt/sessions/s1/workspace/run":   true,
		"/store/sessions/s2/workspace/run": true,
		"/mnt/sessions/s1/../../../etc/x":  true, // by name in the mount: no rule of its own
		"/usr/bin/git":                     false,
		"/root/x.sh":                       false,
		"/storex/run":                      false,
	} {
		assert.Equal(t, inside, namedInside(c, name), name)
	}
}

// TestCommandRuleset: a thread restricted by a command's ruleset works in its folder, makes no device there,
// reads no secret, and neither signals nor reaches the abstract sockets of what runs outside it.
func TestCommandRuleset(t *testing.T) {
	if err := Supported(); err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	work := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("s"), 0o600))
	l, err := net.Listen("unix", fmt.Sprintf("@sessionfs-confine-%d", os.Getpid()))
	require.NoError(t, err)
	defer l.Close()
	sleep := exec.Command("sleep", "600")
	require.NoError(t, sleep.Start())
	defer func() { _ = sleep.Process.Kill(); _ = sleep.Wait() }()

	rs, err := Command{RW: []string{work}, Session: []string{work}}.ruleset(ABI(), -1, false)
	require.NoError(t, err)
	onThrowawayThread(func() {
		if !assert.NoError(t, unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) || !assert.NoError(t, restrictThread(rs)) {
			return
		}
		fd, err := unix.Open(filepath.Join(work, "f"), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if assert.NoError(t, err, "a file in its folder") {
			unix.Close(fd)
		}
		assert.NoError(t, unix.Mknod(filepath.Join(work, "fifo"), unix.S_IFIFO|0o644, 0), "a FIFO in its folder")
		assert.ErrorIs(t, unix.Mknod(filepath.Join(work, "null"), unix.S_IFCHR|0o644, int(unix.Mkdev(1, 3))), unix.EACCES, "a device")
		_, err = unix.Open(secret, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		assert.ErrorIs(t, err, unix.EACCES, "a file outside")
		assert.ErrorIs(t, unix.Kill(sleep.Process.Pid, unix.SIGKILL), unix.EPERM, "a signal outside")
		s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if assert.NoError(t, err) {
			defer unix.Close(s)
			assert.ErrorIs(t, unix.Connect(s, &unix.SockaddrUnix{Name: l.Addr().String()}), unix.EPERM, "an abstract socket outside")
		}
	})
	var ws unix.WaitStatus
	got, err := unix.Wait4(sleep.Process.Pid, &ws, unix.WNOHANG, nil)
	require.NoError(t, err)
	assert.Zero(t, got, "the process outside was signalled")
}
