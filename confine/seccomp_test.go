package confine

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// filteredChildEnv makes this test binary the filtered child of TestServingFilterRefusesTerminalIoctls: the filter
// is one-way and covers every thread, so it is loaded in a copy, never in the test process.
const filteredChildEnv = "SESSIONFS_CONFINE_FILTERED_CHILD"

// The serving process's filter refuses the ioctls that type into a terminal (TIOCSTI), or change it (TIOCLINUX,
// TIOCSETD), on a terminal it holds as its controlling one, and allows the requests it makes. Before the filter,
// the same process pushes a byte into the terminal (which shows the push works here, so the refusal is the
// filter's); the terminal's input holds that byte and nothing else.
func TestServingFilterRefusesTerminalIoctls(t *testing.T) {
	if os.Getenv(filteredChildEnv) == "1" {
		filteredChild()
		return
	}
	slave := openPTY(t)
	child := exec.Command(os.Args[0], "-test.run=^TestServingFilterRefusesTerminalIoctls$", "-test.count=1")
	child.Env = append(os.Environ(), filteredChildEnv+"=1")
	child.ExtraFiles = []*os.File{slave} // its fd 3, its controlling terminal
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3}
	out, err := child.CombinedOutput()
	require.NoError(t, err, "%s", out)
	got := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if name, res, ok := strings.Cut(strings.TrimPrefix(l, "ioctl "), "="); ok && strings.HasPrefix(l, "ioctl ") {
			got[name] = res
		}
	}
	if got["unfiltered TIOCSTI"] != "ok" {
		t.Skipf("TIOCSTI is refused here even without the filter (%s: dev.tty.legacy_tiocsti=0 and no CAP_SYS_ADMIN), so there is nothing to refuse", got["unfiltered TIOCSTI"])
	}
	enotty := unix.ENOTTY.Error()
	assert.Equal(t, map[string]string{
		"unfiltered TIOCSTI": "ok", "TIOCSTI": enotty, "TIOCSTI, high bits set": enotty, "TIOCLINUX": enotty,
		"TIOCSETD": enotty, "TCGETS": "ok", "TIOCGWINSZ": "ok", "FIONREAD": "ok",
	}, got, "%s", out)
	// The terminal's input holds the byte pushed before the filter, and nothing after.
	queued, err := unix.IoctlGetInt(int(slave.Fd()), unix.TIOCINQ)
	require.NoError(t, err)
	buf := make([]byte, 64)
	n := 0
	if queued > 0 {
		n, err = slave.Read(buf)
		require.NoError(t, err)
	}
	assert.Equal(t, "a", string(buf[:n]), "what a shell reading the terminal would run")
}

// filteredChild pushes a byte into its terminal (fd 3), loads the serving process's filter, and tries the
// terminal's ioctls again, printing each result as "ioctl NAME=ok" or "ioctl NAME=<error>".
func filteredChild() {
	const tty = 3
	try := func(name string, req uint64, arg unsafe.Pointer) {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, tty, uintptr(req), uintptr(arg))
		res := "ok"
		if errno != 0 {
			res = errno.Error()
		}
		fmt.Printf("ioctl %s=%s\n", name, res)
	}
	a, b := byte('a'), byte('b')
	try("unfiltered TIOCSTI", unix.TIOCSTI, unsafe.Pointer(&a))
	if err := filterCalls(SeccompErrno); err != nil {
		fmt.Println("filter:", err)
		os.Exit(1)
	}
	try("TIOCSTI", unix.TIOCSTI, unsafe.Pointer(&b))
	// The kernel reads the request's low 32 bits; the filter compares all 64.
	try("TIOCSTI, high bits set", 1<<32|unix.TIOCSTI, unsafe.Pointer(&b))
	sel := [2]byte{3, 0} // TIOCL_SETSEL's paste counterpart, TIOCL_PASTESEL
	try("TIOCLINUX", unix.TIOCLINUX, unsafe.Pointer(&sel[0]))
	disc := int32(0)
	try("TIOCSETD", unix.TIOCSETD, unsafe.Pointer(&disc))
	var tios unix.Termios
	try("TCGETS", unix.TCGETS, unsafe.Pointer(&tios))
	var ws unix.Winsize
	try("TIOCGWINSZ", unix.TIOCGWINSZ, unsafe.Pointer(&ws))
	var n int32
	try("FIONREAD", unix.TIOCINQ, unsafe.Pointer(&n))
	os.Exit(0)
}

// openPTY opens a pseudo-terminal and returns its slave, in raw mode (each byte readable as it arrives); the master
// stays open until the test ends.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	master := os.NewFile(uintptr(m), "ptmx")
	t.Cleanup(func() { master.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetUint32(m, unix.TIOCGPTN)
	require.NoError(t, err)
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { slave.Close() })
	tios, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	require.NoError(t, err)
	tios.Lflag &^= unix.ICANON | unix.ECHO
	require.NoError(t, unix.IoctlSetTermios(int(slave.Fd()), unix.TCSETS, tios))
	return slave
}

// The requests allowed are the daemon's, never a terminal's writes.
func TestIoctlRequestsLeaveTerminalsAlone(t *testing.T) {
	assert.NotContains(t, allowed, "ioctl", "ioctl is allowed only for ioctlRequests")
	for _, req := range []uint64{unix.TIOCSTI, unix.TIOCLINUX, unix.TIOCSETD, unix.TCSETS, unix.TIOCSCTTY} {
		assert.False(t, slices.Contains(ioctlRequests, req), "%#x is allowed", req)
	}
}

// The program decides each call as intended, the calls after a conditional one included (go-seccomp-bpf's
// program compared a failed condition's argument with the following calls' numbers: tgkill aimed at pid 56 passed
// as clone, 56 on x86-64).
func TestServingProgramDecides(t *testing.T) {
	info, err := arch.GetInfo("")
	require.NoError(t, err)
	const self = 4242
	nr := func(name string) int {
		n, ok := info.SyscallNames[name]
		require.True(t, ok, name)
		return n
	}
	errno := func(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }
	allow, eperm, enotty, enosys := uint32(unix.SECCOMP_RET_ALLOW), errno(unix.EPERM), errno(unix.ENOTTY), errno(unix.ENOSYS)
	prog, err := servingProgram(info, SeccompErrno, self)
	require.NoError(t, err)
	call := func(nr int, args ...uint64) uint32 { return runFilter(t, prog, uint32(info.ID), nr, args...) }

	assert.Equal(t, allow, call(nr("read"), 3, 0, 10))
	assert.Equal(t, allow, call(nr("ioctl"), 12, fuseDevIocBackingOpen, 0))
	assert.Equal(t, allow, call(nr("ioctl"), 12, fuseDevIocBackingClose, 0))
	assert.Equal(t, allow, call(nr("ioctl"), 5, unix.TCGETS, 0))
	assert.Equal(t, enotty, call(nr("ioctl"), 1, unix.TIOCSTI, 0))
	assert.Equal(t, enotty, call(nr("ioctl"), 1, 1<<32|unix.TIOCSTI, 0), "the kernel would read TIOCSTI")
	assert.Equal(t, enotty, call(nr("ioctl"), 1, 1<<32|unix.TCGETS, 0), "allowed only as itself")
	assert.Equal(t, enotty, call(nr("ioctl"), 1, unix.TIOCLINUX, 0))
	assert.Equal(t, enotty, call(nr("ioctl"), 1, unix.TIOCSETD, 0))
	for _, later := range []string{"clone", "clone3", "read", "ioctl"} {
		assert.Equal(t, enotty, call(nr("ioctl"), 1, uint64(nr(later)), 0), "a request equal to %s's number", later)
	}
	assert.Equal(t, allow, call(nr("tgkill"), self, 7, 23))
	assert.Equal(t, eperm, call(nr("tgkill"), 1, 1, 9))
	assert.Equal(t, eperm, call(nr("tgkill"), uint64(nr("clone")), 1, 9), "a pid equal to clone's number")
	assert.Equal(t, eperm, call(nr("tgkill"), 1<<32|self, 1, 9))
	threads := uint64(unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_SYSVSEM | unix.CLONE_THREAD)
	assert.Equal(t, allow, call(nr("clone"), threads))
	assert.Equal(t, eperm, call(nr("clone"), threads|unix.CLONE_NEWUSER))
	assert.Equal(t, eperm, call(nr("clone"), unix.CLONE_NEWNS))
	assert.Equal(t, enosys, call(nr("clone3"), 0, 88))
	for _, name := range []string{"mount", "unshare", "setns", "execve", "ptrace", "socket", "kill", "setuid"} {
		assert.Equal(t, eperm, call(nr(name)), name)
	}
	assert.Equal(t, eperm, runFilter(t, prog, uint32(arch.I386.ID), 3), "another architecture's read")
	if info.ID == arch.X86_64.ID {
		assert.Equal(t, enosys, call(arch.X32.SeccompMask|nr("read")), "x32's read")
	}

	kill, err := servingProgram(info, SeccompKill, self)
	require.NoError(t, err)
	assert.Equal(t, uint32(unix.SECCOMP_RET_KILL_PROCESS), runFilter(t, kill, uint32(info.ID), nr("mount")))
	assert.Equal(t, enotty, runFilter(t, kill, uint32(info.ID), nr("ioctl"), 1, unix.TIOCSTI),
		"a caller chooses the request its ioctl through the mount makes the daemon repeat: never a kill")
	logged, err := servingProgram(info, SeccompLog, self)
	require.NoError(t, err)
	assert.Equal(t, uint32(unix.SECCOMP_RET_LOG), runFilter(t, logged, uint32(info.ID), nr("mount")))
	assert.Equal(t, uint32(unix.SECCOMP_RET_LOG), runFilter(t, logged, uint32(info.ID), nr("ioctl"), 1, unix.TIOCSTI))
	_, err = servingProgram(info, "trap", self)
	assert.ErrorContains(t, err, `seccomp mode "trap"`)
}

// runFilter runs a seccomp program on one call as the kernel does (the instructions servingProgram uses: loads
// of seccomp_data's 32-bit words in the machine's order, jumps on constants, returns) and returns its action.
func runFilter(t *testing.T, prog []unix.SockFilter, auditArch uint32, nr int, args ...uint64) uint32 {
	t.Helper()
	data := make([]byte, seccompArgs+6*8)
	binary.NativeEndian.PutUint32(data[seccompNr:], uint32(nr))
	binary.NativeEndian.PutUint32(data[seccompArch:], auditArch)
	for i, a := range args {
		binary.NativeEndian.PutUint64(data[seccompArgs+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		jump := func(taken bool) {
			if taken {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		}
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = binary.NativeEndian.Uint32(data[in.K:])
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			jump(acc == in.K)
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			jump(acc >= in.K)
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			jump(acc&in.K != 0)
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("instruction %d: code %#x", pc, in.Code)
		}
	}
	t.Fatal("the program runs off its end")
	return 0
}
