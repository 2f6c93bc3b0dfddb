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
//   - ioctl TIOCSCTTY with its "steal" argument (take a terminal that is another session's) and TIOCCONS (the
//     console's output): EPERM (the kernel wants CAP_SYS_ADMIN for both, which the command lacks: a second
//     wall). TIOCSCTTY with 0 stays: forkpty (node-pty) gives the pty it made to its child with it, and a
//     terminal some session holds is refused it by the kernel. TIOCSPGRP (tcsetpgrp) stays too: a shell with
//     job control needs it, and in its PID namespace (backends/local) the command names only its own process
//     groups, all killed when it ends, so none is left to take the terminal back from the caller's shell and
//     read what the user types next (the review's finding); refused, it hung bash -i, which cannot see the
//     caller's process group from there and stops itself (SIGTTIN) until it is the terminal's foreground;
//   - unix sockets, where Landlock cannot say which ones it reaches (before ABI 9's resolve-unix right): making
//     one (socket(AF_UNIX)) is refused with EACCES, so no pathname socket outside the sandbox (the Docker API,
//     D-Bus, ssh-agent) answers; socketpair stays for its stream and seqpacket types alone (node, libuv and
//     shells talk to their children over them): any other type is refused, for a datagram pair (SOCK_DGRAM, and
//     SOCK_RAW, which the kernel makes a datagram one) could send to any datagram socket by name (/dev/log,
//     systemd's notify socket);
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

// argRule decides a call by its argument arg (its low 32 bits, masked when mask != 0): refused when it is one of
// refused, or one of guarded while argument guardArg (low 32 bits) is not 0, or, when allowed is set, none of
// allowed. Everything else passes.
type argRule struct {
	call     string
	arg      uint32
	mask     uint32
	refused  []uint32
	guarded  []uint32
	guardArg uint32
	allowed  []uint32
	errno    unix.Errno
}

// The terminal's requests a command may not make (see above).
var (
	refusedIoctls = []uint32{unix.TIOCSTI, unix.TIOCLINUX, unix.TIOCSETD, unix.TIOCCONS}
	stealIoctls   = []uint32{unix.TIOCSCTTY} // refused with a non-zero argument
)

// socketpairTypes are the socketpair types a command may make, SOCK_NONBLOCK and SOCK_CLOEXEC aside.
var socketpairTypes = []uint32{unix.SOCK_STREAM, unix.SOCK_SEQPACKET}

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
	rules := []argRule{{call: "ioctl", arg: 1, refused: refusedIoctls, guarded: stealIoctls, guardArg: 2, errno: unix.EPERM}}
	if abi < resolveUnixABI {
		rules = append(rules,
			argRule{call: "socket", arg: 0, refused: []uint32{unix.AF_UNIX}, errno: unix.EACCES},
			argRule{call: "socketpair", arg: 1, mask: ^uint32(unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC),
				allowed: socketpairTypes, errno: unix.EACCES})
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
		block := r.block()
		if len(block) > 255 {
			return nil, fmt.Errorf("internal: the %s rule is too long for a jump", r.call)
		}
		prog = append(prog, jeq(n, 0, uint8(len(block))))
		prog = append(prog, block...)
	}
	if n, err := nr("io_uring_setup"); err == nil {
		prog = append(prog, jeq(n, 0, 1), errno(unix.ENOSYS))
	}
	return append(prog, allow), nil
}

// block is r's program, entered when the call is r's: the number is reloaded by the next rule's block, which
// follows it; every path ends here in an allow or r's errno.
//
//	load arg (and mask); a jump per refused, guarded and allowed value; a jump to allow (deny when allowed is
//	set); [guard: load guardArg; zero: allow, else deny]; allow; deny
func (r argRule) block() []unix.SockFilter {
	head := []unix.SockFilter{load(dataArgs + 8*r.arg)}
	if r.mask != 0 {
		head = append(head, unix.SockFilter{Code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, K: r.mask})
	}
	jumps := len(r.refused) + len(r.guarded) + len(r.allowed)
	fall := len(head) + jumps // the jump taken when no value matched
	guard := fall + 1
	allowAt := guard
	if len(r.guarded) > 0 {
		allowAt += 2
	}
	denyAt := allowAt + 1
	to := func(from, target int) uint8 { return uint8(target - from - 1) }
	prog := head
	for _, v := range r.refused {
		prog = append(prog, jeq(v, to(len(prog), denyAt), 0))
	}
	for _, v := range r.guarded {
		prog = append(prog, jeq(v, to(len(prog), guard), 0))
	}
	for _, v := range r.allowed {
		prog = append(prog, jeq(v, to(len(prog), allowAt), 0))
	}
	otherwise := allowAt
	if len(r.allowed) > 0 {
		otherwise = denyAt
	}
	prog = append(prog, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JA, K: uint32(otherwise - len(prog) - 1)})
	if len(r.guarded) > 0 {
		prog = append(prog, load(dataArgs+8*r.guardArg), jeq(0, 0, 1))
	}
	return append(prog, allow, errno(r.errno))
}

// The filter's instructions.
var allow = ret(unix.SECCOMP_RET_ALLOW)

func ret(v uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: v} }

func errno(e unix.Errno) unix.SockFilter { return ret(unix.SECCOMP_RET_ERRNO | uint32(e)) }

func load(off uint32) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
}

func jeq(v uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: v, Jt: jt, Jf: jf}
}

// loadThreadFilter installs prog on the calling thread alone (no_new_privs must be set): the thread about to exec.
func loadThreadFilter(prog []unix.SockFilter) error {
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return errno
	}
	return nil
}
