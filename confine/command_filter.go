package confine

import (
	"fmt"
	"unsafe"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"
)

// A command's seccomp filter refuses what Landlock does not govern, and allows everything else (the command is
// any program: no allow-list fits it):
//
//   - ioctl TIOCSTI (type into the terminal: the shell that ran sessionfs would run it, unconfined, once the
//     command ends), TIOCLINUX (the console's selection and paste) and TIOCSETD (a line discipline, a kernel
//     module's code): EPERM, on every descriptor, the inherited terminal included (Landlock checks a file's
//     rights when it is opened, never on the descriptors a process starts with). Compared on the low 32 bits:
//     the kernel takes the request as an unsigned int, so its high bits would pass an equality of 64;
//   - unix sockets, where Landlock cannot say which ones it reaches (before ABI 9's resolve-unix right): making
//     one (socket(AF_UNIX)) is refused with EACCES, so no pathname socket outside the sandbox (the Docker API,
//     D-Bus, ssh-agent) answers; socketpair stays (node, libuv and shells talk to their children over it) except
//     a datagram pair, which could send to any datagram socket by name;
//   - io_uring: its operations (socket, connect) pass no seccomp filter; ENOSYS, so libraries fall back to the
//     plain calls;
//   - every call of another architecture's ABI (x86's 32-bit int 0x80, x32): their numbers differ, and 32-bit
//     x86 multiplexes sockets through socketcall, which a filter cannot read. The process is killed (x32 calls
//     get ENOSYS, as in go-seccomp-bpf).
//
// The arguments are read as little-endian words: the architectures go-seccomp-bpf knows the calls of are.

// The fields of struct seccomp_data.
const (
	dataNr   = 0
	dataArch = 4
	dataArgs = 16
)

// argRule refuses a call whose argument arg (its low 32 bits, masked when mask != 0) is one of values.
type argRule struct {
	call   string
	arg    uint32
	mask   uint32
	values []uint32
	errno  unix.Errno
}

// commandFilter is the filter's program for this architecture and the kernel's Landlock ABI.
func commandFilter(abi int) ([]unix.SockFilter, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	nr := func(name string) (uint32, error) {
		n, ok := info.SyscallNames[name]
		if !ok {
			return 0, fmt.Errorf("no %s call known for %s", name, info.Name)
		}
		return uint32(n), nil
	}
	rules := []argRule{{call: "ioctl", arg: 1, values: []uint32{unix.TIOCSTI, unix.TIOCLINUX, unix.TIOCSETD}, errno: unix.EPERM}}
	if abi < resolveUnixABI {
		rules = append(rules,
			argRule{call: "socket", arg: 0, values: []uint32{unix.AF_UNIX}, errno: unix.EACCES},
			argRule{call: "socketpair", arg: 1, mask: 0xf, values: []uint32{unix.SOCK_DGRAM}, errno: unix.EACCES})
	}
	ret := func(v uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: v} }
	errno := func(e unix.Errno) unix.SockFilter { return ret(unix.SECCOMP_RET_ERRNO | uint32(e)) }
	allow := ret(unix.SECCOMP_RET_ALLOW)
	load := func(off uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
	}
	jeq := func(v uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: v, Jt: jt, Jf: jf}
	}
	prog := []unix.SockFilter{
		load(dataArch),
		jeq(uint32(info.ID), 1, 0),
		ret(unix.SECCOMP_RET_KILL_PROCESS),
		load(dataNr),
	}
	if info.ID == arch.X86_64.ID {
		prog = append(prog,
			unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: uint32(arch.X32.SeccompMask), Jt: 0, Jf: 1},
			errno(unix.ENOSYS))
	}
	for _, r := range rules {
		n, err := nr(r.call)
		if err != nil {
			return nil, err
		}
		block := []unix.SockFilter{load(dataArgs + 8*r.arg)}
		if r.mask != 0 {
			block = append(block, unix.SockFilter{Code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, K: r.mask})
		}
		for i, v := range r.values {
			block = append(block, jeq(v, uint8(len(r.values)-i), 0)) // to the errno after the allow
		}
		block = append(block, allow, errno(r.errno))
		prog = append(prog, jeq(n, 0, uint8(len(block))))
		prog = append(prog, block...)
	}
	if n, err := nr("io_uring_setup"); err == nil {
		prog = append(prog, jeq(n, 0, 1), errno(unix.ENOSYS))
	}
	return append(prog, allow), nil
}

// loadThreadFilter installs prog on the calling thread alone (no_new_privs must be set): the thread about to exec.
func loadThreadFilter(prog []unix.SockFilter) error {
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return errno
	}
	return nil
}
