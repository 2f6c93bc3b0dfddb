package confine

import (
	"fmt"
	"os"
	"slices"

	seccomp "github.com/elastic/go-seccomp-bpf"
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
	// A caller's filesystem identity for what is made on its behalf (fs/nodes/at.go); no other identity call.
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

// ioctlRequests are the only ioctl requests the serving process makes, measured as allowed was (the kernel logs
// a refused call's number, not its request: strace of the serving process gave those):
//   - FUSE passthrough: go-fuse registers each opened store file with the kernel and unregisters it on release;
//   - FIONREAD (TIOCINQ): go-fuse empties a splice pipe it reuses (and panics if it cannot ask how much it holds);
//   - TCGETS, TIOCGWINSZ: a caller's own ioctl on a file of the mount reaches the daemon as a FUSE request, which
//     go-fuse repeats on the store's file; isatty() (glibc's TCGETS, musl's TIOCGWINSZ: Python asks at every
//     open) is the one callers make. Both only read, and a store file answers ENOTTY.
//
// Not TIOCSTI, TIOCLINUX or TIOCSETD (typing into a terminal, or changing its line discipline), nor any other.
var ioctlRequests = []uint64{fuseDevIocBackingOpen, fuseDevIocBackingClose, unix.TIOCINQ, unix.TCGETS, unix.TIOCGWINSZ}

// FUSE's device ioctls for passthrough (linux/fuse.h; go-fuse's values): _IOW(229, 1, struct fuse_backing_map)
// and _IOW(229, 2, uint32_t).
const (
	fuseDevIocBackingOpen  = 0x4010e501
	fuseDevIocBackingClose = 0x4004e502
)

// refusedIoctl is what an ioctl request not on ioctlRequests gets, in every mode but log: ENOTTY, what a file
// without that request answers. Never the kill of --seccomp kill: a caller chooses the request of its own ioctl
// on a file of the mount, which go-fuse repeats, so a kill would let any caller end the mount.
var refusedIoctl = seccomp.Action(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOTTY))

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
	known := func(names []string) []string {
		return slices.DeleteFunc(slices.Clone(names), func(n string) bool { _, ok := info.SyscallNames[n]; return !ok })
	}
	deny, denyIoctl := seccomp.ActionErrno, refusedIoctl
	switch mode {
	case SeccompErrno, "":
	case SeccompKill:
		deny = seccomp.ActionKillProcess
	case SeccompLog:
		deny, denyIoctl = seccomp.ActionLog, seccomp.ActionLog
	default:
		return fmt.Errorf("seccomp mode %q: want %s, %s or %s", mode, SeccompErrno, SeccompKill, SeccompLog)
	}
	self := seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: uint64(os.Getpid())}}
	var own []seccomp.NameWithConditions
	for _, n := range known(signalled) {
		own = append(own, seccomp.NameWithConditions{Name: n, Conditions: self})
	}
	// Threads, never namespaces: clone with a CLONE_NEW* flag is unshare by another name. clone3 passes its
	// flags in memory a filter cannot read: ENOSYS, so that glibc (a cgo build) falls back to clone.
	threads := seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsNotSet, Value: namespaces}}
	own = append(own, seccomp.NameWithConditions{Name: "clone", Conditions: threads})
	// The request is compared in all 64 bits: the kernel reads only the low 32, so a value with any high bit set
	// is refused here whatever the kernel would make of it.
	for _, req := range ioctlRequests {
		own = append(own, seccomp.NameWithConditions{Name: "ioctl", Conditions: seccomp.ArgumentConditions{
			{Argument: 1, Operation: seccomp.Equal, Value: req}}})
	}
	return seccomp.LoadFilter(seccomp.Filter{
		NoNewPrivs: true,
		Flag:       seccomp.FilterFlagTSync | seccomp.FilterFlagLog,
		Policy: seccomp.Policy{DefaultAction: deny, Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionAllow, Names: known(allowed)},
			{Action: seccomp.ActionAllow, NamesWithCondtions: own},
			{Action: seccomp.Action(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)), Names: known([]string{"clone3"})},
			{Action: denyIoctl, Names: []string{"ioctl"}}, // the requests not allowed above
		}},
	})
}

// namespaces are clone's flags that make a new namespace.
const namespaces = unix.CLONE_NEWNS | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME
