package confine

import (
	"fmt"
	"os"
	"unsafe"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"
)

// allowed are the system calls the serving process makes: measured by running the whole e2e suite and the POSIX
// test with every other call logged (--seccomp log), plus what the Go runtime makes in rare paths (signals,
// profiling, stack growth). Names a architecture lacks are left out for it.
var allowed = []string{
	// The Go runtime: memory, threads, scheduling, signals, timers, the netpoller.
	"brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "mincore", "membarrier",
	"exit", "exit_group", "futex", "set_robust_list", "rseq", "sched_yield",
	"sched_getaffinity", "gettid", "getpid", "getppid", "nanosleep", "clock_gettime", "clock_nanosleep",
	"gettimeofday", "time", "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack",
	"setitimer", "timer_create", "timer_settime", "timer_delete",
	"epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd2", "pipe2",
	"poll", "ppoll", "getrlimit", "prlimit64", "uname", "getrandom", "prctl", "capget", "arch_prctl",
	"getuid", "geteuid", "getgid", "getegid", "getgroups", "restart_syscall",
	// A caller's filesystem identity for what is made on its behalf (mount/nodes/at.go); no other identity call.
	"setfsuid", "setfsgid",
	// Descriptors and I/O: /dev/fuse (read, write; its ioctls are ioctlRequests), files, the socket to the helper.
	"read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2", "pwritev2",
	"close", "close_range", "dup", "dup2", "dup3", "fcntl", "lseek", "splice", "tee",
	"sendfile", "copy_file_range", "sendmsg", "recvmsg", "sendto", "recvfrom", "shutdown", "getsockopt",
	"setsockopt", "getsockname", "getpeername",
	// The store, beneath its descriptors (Landlock bounds where).
	"openat", "openat2", "open", "creat", "fstat", "newfstatat", "stat", "lstat", "statx", "fstatfs", "statfs",
	"getdents64", "getdents", "mkdirat", "mkdir", "mknodat", "unlinkat", "unlink", "rmdir", "renameat",
	"renameat2", "rename", "linkat", "link", "symlinkat", "symlink", "readlinkat", "readlink",
	"fchmod", "fchmodat", "fchmodat2", "chmod", "fchown", "fchownat", "lchown", "chown", "utimensat",
	"futimesat", "utimes", "utime", "fsync", "fdatasync", "sync_file_range", "syncfs", "ftruncate", "truncate",
	"fallocate", "faccessat", "faccessat2", "access", "flock", "fadvise64", "getcwd", "umask",
	"getxattr", "lgetxattr", "fgetxattr", "getxattrat", "setxattr", "lsetxattr", "fsetxattr", "setxattrat",
	"listxattr", "llistxattr", "flistxattr", "listxattrat", "removexattr", "lremovexattr", "fremovexattr",
	"removexattrat",
	// The watcher.
	"inotify_init1", "inotify_add_watch", "inotify_rm_watch",
	// Reaping the helper when it ends: os/exec waits on its pidfd, then calls waitid (only a child can be reaped).
	"waitid", "wait4",
}

// ioctlRequests are the only ioctl requests the serving process makes (the kernel's log names a refused call, not
// its request: strace and the kernel's syscall trace of the serving process gave these, running the mount's e2e
// tests):
//   - FUSE passthrough: go-fuse registers each opened store file with the kernel and unregisters it on release;
//   - FIONREAD (TIOCINQ): go-fuse empties the pipe it splices a read through (where passthrough is not to be
//     had: a store on overlayfs), and panics if it cannot ask how much the pipe holds;
//   - TCGETS, TIOCGWINSZ, FS_IOC_GETFLAGS: a caller's own ioctl on a file of the mount reaches the daemon as a
//     FUSE request, which go-fuse repeats on the store's file. isatty() (glibc's TCGETS, musl's TIOCGWINSZ:
//     Python asks at every open; a store file answers ENOTTY) and lsattr are those callers make; each only
//     reads. Setting a file's flags or project (chattr, FS_IOC_FSSETXATTR: the latter with the daemon's
//     SYS_ADMIN) is refused.
//
// Not TIOCSTI, TIOCLINUX or TIOCSETD (typing into a terminal, or changing its line discipline), nor any other.
var ioctlRequests = []uint64{fuseDevIocBackingOpen, fuseDevIocBackingClose, unix.TIOCINQ, unix.TCGETS, unix.TIOCGWINSZ,
	unix.FS_IOC_GETFLAGS}

// FUSE's device ioctls for passthrough (linux/fuse.h; go-fuse's values): _IOW(229, 1, struct fuse_backing_map)
// and _IOW(229, 2, uint32_t).
const (
	fuseDevIocBackingOpen  = 0x4010e501
	fuseDevIocBackingClose = 0x4004e502
)

// refusedIoctl is what an ioctl request not on ioctlRequests gets, in every mode but log: ENOTTY, what a file
// without that request answers. Never the kill of --seccomp kill: a caller chooses the request of its own ioctl
// on a file of the mount, which go-fuse repeats, so a kill would let any caller end the mount.
const refusedIoctl = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOTTY)

// signalled are the calls that send a signal: the Go runtime signals its own threads (preemption, a crash's
// dump), and nothing else. They are allowed only with the process's own pid as the target's process.
var signalled = []string{"tgkill"}

// Seccomp modes.
const (
	SeccompErrno = "errno" // a call not allowed fails with EPERM and the kernel logs it (the default)
	SeccompKill  = "kill"  // a call not allowed kills the serving process
	SeccompLog   = "log"   // every call is allowed; those not on the list are logged (to measure the list)
)

// filterCalls installs the allow-list on every thread of the process (TSYNC).
func filterCalls(mode string) error {
	info, err := arch.GetInfo("")
	if err != nil {
		return err
	}
	prog, err := servingProgram(info, mode, os.Getpid())
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	flags := uintptr(unix.SECCOMP_FILTER_FLAG_TSYNC | unix.SECCOMP_FILTER_FLAG_LOG)
	// With TSYNC, a thread that cannot take the filter is named by a positive return.
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	switch {
	case errno != 0:
		return fmt.Errorf("load the filter: %w", errno)
	case r != 0:
		return fmt.Errorf("load the filter: thread %d cannot take it", r)
	}
	return nil
}

// Offsets in struct seccomp_data, which a filter reads.
const (
	seccompNr   = 0
	seccompArch = 4
	seccompArgs = 16 // six 64-bit arguments, in the machine's byte order
)

// servingProgram assembles the filter for the process pid. It is written by hand, not with go-seccomp-bpf's
// policies: after a call's argument fails its condition, their program goes on comparing the argument it loaded
// (not the call's number) with the following calls' numbers, so tgkill aimed at pid 56 passed as clone (56 on
// x86-64), and an ioctl request equal to a later call's number would take that call's action. Here each
// conditional call's block ends in a return of its own.
func servingProgram(info *arch.Info, mode string, pid int) ([]unix.SockFilter, error) {
	ret := func(v uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: v} }
	load := func(off uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
	}
	jump := func(op uint16, v uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | op | unix.BPF_K, K: v, Jt: jt, Jf: jf}
	}
	allow := ret(unix.SECCOMP_RET_ALLOW)
	deny, denyIoctl := ret(unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM)), ret(refusedIoctl)
	switch mode {
	case SeccompErrno, "":
	case SeccompKill:
		deny = ret(unix.SECCOMP_RET_KILL_PROCESS)
	case SeccompLog:
		deny, denyIoctl = ret(unix.SECCOMP_RET_LOG), ret(unix.SECCOMP_RET_LOG)
	default:
		return nil, fmt.Errorf("seccomp mode %q: want %s, %s or %s", mode, SeccompErrno, SeccompKill, SeccompLog)
	}
	// An argument's two 32-bit halves, in the machine's byte order.
	lo, hi := uint32(0), uint32(4)
	if !littleEndian() {
		lo, hi = 4, 0
	}
	arg := func(n uint32) (uint32, uint32) { return seccompArgs + 8*n + lo, seccompArgs + 8*n + hi }
	prog := []unix.SockFilter{
		// Another architecture's calls (x86's int 0x80) have other numbers: none is this list's.
		load(seccompArch),
		jump(unix.BPF_JEQ, uint32(info.ID), 1, 0),
		deny,
		load(seccompNr),
	}
	if info.ID == arch.X86_64.ID { // x32's calls are x86-64's numbers with a bit set
		prog = append(prog, jump(unix.BPF_JGE, uint32(arch.X32.SeccompMask), 0, 1), ret(unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS)))
	}
	// block appends the instructions that decide the call name, skipped for any other call; it must end in a
	// return (it clobbers the number it is given).
	block := func(name string, body ...unix.SockFilter) {
		if nr, ok := info.SyscallNames[name]; ok {
			prog = append(prog, jump(unix.BPF_JEQ, uint32(nr), 0, uint8(len(body))))
			prog = append(prog, body...)
		}
	}
	// Signals only to the process itself (the Go runtime's preemption of its own threads, a crash's dump).
	pidLo, pidHi := arg(0)
	for _, name := range signalled {
		block(name, load(pidHi), jump(unix.BPF_JEQ, 0, 0, 2), load(pidLo), jump(unix.BPF_JEQ, uint32(pid), 1, 0), deny, allow)
	}
	// Threads, never namespaces: clone with a CLONE_NEW* flag is unshare by another name. clone3 passes its
	// flags in memory a filter cannot read: ENOSYS, so that glibc (a cgo build) falls back to clone.
	flagsLo, flagsHi := arg(0)
	block("clone", load(flagsHi), jump(unix.BPF_JEQ, 0, 0, 2), load(flagsLo), jump(unix.BPF_JSET, namespaces, 0, 1), deny, allow)
	block("clone3", ret(unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS)))
	// ioctl: the requests of ioctlRequests, compared in all 64 bits (the kernel reads the low 32, so a request
	// with a high bit set is refused here whatever the kernel would make of it).
	reqLo, reqHi := arg(1)
	requests := []unix.SockFilter{load(reqHi), jump(unix.BPF_JEQ, 0, 1, 0), denyIoctl, load(reqLo)}
	for _, req := range ioctlRequests {
		requests = append(requests, jump(unix.BPF_JEQ, uint32(req), 0, 1), allow)
	}
	block("ioctl", append(requests, denyIoctl)...)
	// The calls allowed whatever their arguments come after the ones decided by an argument: the kernel caches
	// their answer by number (its seccomp action cache) and never runs the program for them, while an ioctl
	// (two on every open of a file through the mount: passthrough's backing open and close) runs it, and would
	// otherwise first walk this whole list.
	for _, name := range allowed {
		if nr, ok := info.SyscallNames[name]; ok { // a name this architecture lacks is left out
			prog = append(prog, jump(unix.BPF_JEQ, uint32(nr), 0, 1), allow)
		}
	}
	return append(prog, deny), nil
}

// littleEndian reports the machine's byte order, which seccomp_data's arguments are in.
func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

// namespaces are clone's flags that make a new namespace.
const namespaces = unix.CLONE_NEWNS | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME
