package e2e

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// Two holes of exec --landlock that a mount namespace of the run's own closes (backends/local/sandbox.go): the
// command read and wrote the host's other terminals in /dev/pts, and, run on the store itself (where it had no
// namespace), it opened a device node planted in the session's folder (the raw disk). And a run that cannot have
// the namespace is refused, not run without it.

// The attacks through the terminal are attack_landlock_terminal_test.go's; the sandbox as its user sees it,
// backend_local_landlock_test.go's.

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

// TestLandlockAttackPlantedDevice: a block device node of a disk (a loop device holding a marker, standing for
// the host's disk) lies in the session's folder in the store, made from outside the sandbox, as a container
// with CAP_MKNOD (Docker's default) bound to the store's folder makes it. The sandboxed command reads it, in its
// workspace and in its session's folder, and through a second mount of the store (a bind of it elsewhere):
// nothing of the disk may come out. As root on the store and through the mount, and as a normal user on its
// store (the node open to all, as a container's root may leave it).
func TestLandlockAttackPlantedDevice(t *testing.T) {
	_, err := exec.LookPath("losetup")
	need(t, err == nil, "losetup (util-linux) for a block device to read")
	need(t, os.Geteuid() == 0, "root: a loop device, and a node planted as a container's root plants it")
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
	plant := func(t *testing.T, sessionInStore string) {
		for _, p := range []string{filepath.Join(sessionInStore, "workspace", "disk"), filepath.Join(sessionInStore, "disk")} {
			require.NoError(t, unix.Mknod(p, unix.S_IFBLK|0o666, int(st.Rdev)))
			require.NoError(t, unix.Chmod(p, 0o666))
		}
	}
	read := func(t *testing.T, run func(script string) result, paths ...string) {
		for _, p := range paths {
			r := run(fmt.Sprintf("head -c %d %s", len(hostMarker), p))
			t.Logf("head %s: exit %d, %q %s", p, r.code, r.stdout, strings.TrimSpace(r.stderr))
			assert.NotContains(t, r.stdout, hostMarker, "the raw disk read through a node planted at %s", p)
			assert.NotEqual(t, 0, r.code, p)
		}
	}
	t.Run("as root", func(t *testing.T) {
		eachLandlockPath(t, func(t *testing.T, lt landlockTarget) {
			inStore := filepath.Join(lt.store, "sessions", "s1")
			plant(t, inStore)
			alias := t.TempDir()
			require.NoError(t, unix.Mount(lt.store, alias, "", unix.MS_BIND, ""))
			t.Cleanup(func() { _ = unix.Unmount(alias, unix.MNT_DETACH) })
			read(t, func(script string) result { return lt.landlocked(t, nil, "sh", "-c", script) },
				"disk", `"$SESSION_DIR/disk"`, filepath.Join(alias, "sessions", "s1", "workspace", "disk"))
		})
	})
	t.Run("as a normal user", func(t *testing.T) {
		needUserSandbox(t)
		u := newUserStore(t)
		plant(t, u.session)
		read(t, func(script string) result {
			return runResult(t, u.command(bin, "exec", "s1", "--landlock", "--", "sh", "-c", script))
		}, "disk", `"$SESSION_DIR/disk"`)
	})
}

// TestLandlockAttackProcessList: a process of the host holds a secret on its command line (a token passed as an
// argument, as many tools take one). The sandboxed command lists /proc and reads every command line: it must
// see its own processes alone, and the secret nowhere. As root on the store and through the mount, and as a
// normal user.
func TestLandlockAttackProcessList(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a process of the host's to look for")
	host := exec.Command("sleep", "600")
	host.Args[0] = "sleep-" + hostMarker
	require.NoError(t, host.Start())
	defer func() { _ = host.Process.Kill(); _ = host.Wait() }()
	script := `cat /proc/[0-9]*/cmdline | tr '\0' ' '; echo; echo listed: $(ls /proc | grep '^[0-9]'); readlink /proc/self >/dev/null && echo self: ok`
	check := func(t *testing.T, r result) {
		t.Logf("the sandbox: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		require.Equal(t, 0, r.code, r.stderr)
		assert.NotContains(t, r.stdout, hostMarker, "a command line of the host's was read")
		assert.NotRegexp(t, fmt.Sprintf(`listed:.* %d( |$)`, host.Process.Pid), r.stdout, "the host's process is listed")
		assert.Regexp(t, `listed: 1 `, r.stdout, "the run's init is its pid 1")
		assert.Contains(t, r.stdout, "self: ok", "/proc/self works")
	}
	t.Run("as root", func(t *testing.T) {
		eachLandlockPath(t, func(t *testing.T, lt landlockTarget) {
			check(t, lt.landlocked(t, nil, "sh", "-c", script))
		})
	})
	t.Run("as a normal user", func(t *testing.T) {
		needUserSandbox(t)
		u := newUserStore(t)
		check(t, runResult(t, u.command(bin, "exec", "s1", "--landlock", "--", "sh", "-c", script)))
	})
}

// TestLandlockAttackSharedMemory: /dev/shm is the host's, a tmpfs every program writes in. A root-only file of
// the host's lies there (a 0600 one, as a database's shared memory); the sandboxed command reads it, plants a
// file there for the host's programs to trust, and uses /dev/shm as programs do (Python's multiprocessing). It
// must read and plant nothing, and have a /dev/shm of its own that works: nosuid, nodev, noexec, size-limited.
// As root on the store and through the mount, and as a normal user.
func TestLandlockAttackSharedMemory(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a root-only file of the host's in /dev/shm")
	st, err := os.Stat("/dev/shm")
	need(t, err == nil && st.IsDir(), "a /dev/shm")
	name := fmt.Sprintf("/dev/shm/sessionfs-e2e-%d-", os.Getpid())
	secret, planted, own := name+"secret", name+"planted", name+"own"
	require.NoError(t, os.WriteFile(secret, []byte(hostMarker), 0o600))
	t.Cleanup(func() { os.Remove(secret); os.Remove(planted); os.Remove(own) })
	script := fmt.Sprintf(`cat %s; echo planted > %s; echo mine > %s && cat %s; grep ' /dev/shm ' /proc/self/mountinfo | tail -1`,
		secret, planted, own, own)
	check := func(t *testing.T, r result) {
		t.Logf("the sandbox: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		os.Remove(own)
		assert.NotContains(t, r.stdout, hostMarker, "the host's shared memory was read")
		assert.NoFileExists(t, planted, "a file was planted in the host's shared memory")
		os.Remove(planted)
		assert.Contains(t, r.stdout, "mine", "its own /dev/shm works")
		assert.Regexp(t, `/dev/shm \S*nosuid,nodev,noexec\S* - tmpfs \S+ \S*size=\d+k`, r.stdout, "its own, bounded")
	}
	t.Run("as root", func(t *testing.T) {
		eachLandlockPath(t, func(t *testing.T, lt landlockTarget) {
			check(t, lt.landlocked(t, nil, "sh", "-c", script))
		})
	})
	t.Run("as a normal user", func(t *testing.T) {
		needUserSandbox(t)
		u := newUserStore(t)
		check(t, runResult(t, u.command(bin, "exec", "s1", "--landlock", "--", "sh", "-c", script)))
	})
}
