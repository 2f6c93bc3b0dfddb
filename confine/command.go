package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/sys/unix"
)

// Command is what a command sessionfs starts on this host may reach when its user asks for Landlock (exec
// --landlock, run --backend local --landlock): the system's programs and libraries to read and run, a few
// devices, its session's folder, a TMPDIR of its own, the file it was asked to run, and only what the user adds.
// Everything else (the user's home, other sessions, the store, keys, /etc's secrets) is refused by the kernel, to
// root too, whatever path or link leads there. It holds no capability, makes no device, sends no signal and
// reaches no socket outside its sandbox, and pushes nothing into a terminal nor takes one over (ExecFromEnv).
type Command struct {
	RW []string `json:"rw"` // folders (or files) it may read, write, make and remove in, and run from
	RO []string `json:"ro"` // folders (or files) it may read and run from
	// Session is the run's session folder as the command sees it, and the same folder in the store: a command named
	// inside it is run with no rule of its own (the session's rule covers it), and a rule that lies in the store
	// or the mount must lie in it.
	Session []string `json:"session,omitempty"`
	// Store, Mount and Home are folders no rule may cover ("/" neither): such a rule is refused.
	Store string `json:"store,omitempty"`
	Mount string `json:"mount,omitempty"`
	Home  string `json:"home,omitempty"`
}

// CommandEnv carries a Command, as JSON, to the helper that restricts itself and then execs the command; the
// helper takes it out of the environment first.
const CommandEnv = "SESSIONFS_LANDLOCK"

// systemRO are the system's folders a command reads and runs from: programs, libraries, /proc and /sys (a
// program's own /proc/self, CPU and memory limits), the resolver's stub (/etc/resolv.conf links there). The
// run's /proc is its PID namespace's (backends/local): its own processes and their init, whose environ, mem and
// fds Landlock keeps from it (they need ptrace rights across its domain).
var systemRO = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/proc", "/sys",
	"/run/systemd/resolve"}

// settings is the system's settings folder, read as any user may read it (ReadableByAll): not its secrets.
const settings = "/etc"

// homeRO are the user's settings a command reads below $HOME: git's (git refuses to run when it may not read
// ~/.gitconfig; a missing one is fine).
var homeRO = []string{".gitconfig", ".config/git"}

// devices are the device files a command writes and reads: no disk, no memory.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}

// sharedRW are the folders every command may write in: POSIX shared memory, a tmpfs of the run's own
// (backends/local; terminals: command_rules.go). Not /tmp, which holds other programs' files (a store or a mount
// there, even): the run gets a TMPDIR of its own (backends/local).
var sharedRW = []string{"/dev/shm"}

// landlockScopes is the Landlock ABI that scopes signals and abstract unix sockets to the sandbox: without it a
// command could kill any process of its user (as root: the mount's daemon), so --landlock refuses to run.
const landlockScopes = 6

// Supported says which kernel feature --landlock lacks here (nil: none): Landlock with its ABI 6 scopes, and
// seccomp filters.
func Supported() error {
	switch abi := ABI(); {
	case abi < 1:
		return ErrNoLandlock
	case abi < landlockScopes:
		return fmt.Errorf("the kernel's Landlock ABI is %d; --landlock needs ABI %d (Linux 6.12) to keep the command's signals and abstract unix sockets inside its sandbox", abi, landlockScopes)
	}
	if !seccomp.Supported() {
		return errors.New("the kernel has no seccomp filters (CONFIG_SECCOMP_FILTER); --landlock needs them to refuse terminal injection and unix sockets")
	}
	return nil
}

// Check reports a path the user asked for that is missing or not absolute, or that covers "/", $HOME, the store
// or the mount: refused, rather than a rule left out or one that opens what the sandbox is for. The helper
// checks again, on the very folders it grants.
func (c Command) Check() error {
	for _, p := range append(slices.Clone(c.RW), c.RO...) {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("--allow %s: want an absolute path", p)
		}
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("--allow %s: %w", p, err)
		}
	}
	g, err := newGuard(Command{Store: c.Store, Mount: c.Mount, Home: c.Home})
	if err != nil {
		return err
	}
	check := func(flag, p string) error {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("%s %s: %w", flag, p, err)
		}
		defer unix.Close(fd)
		return g.check(flag+" "+p, fd)
	}
	for _, p := range c.RW {
		if err := check("--allow", p); err != nil {
			return err
		}
	}
	for _, p := range c.RO {
		if err := check("--allow-read", p); err != nil {
			return err
		}
	}
	return nil
}

// Encode is c as CommandEnv carries it.
func (c Command) Encode() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// ExecFromEnv runs argv (argv[0] already found on PATH) confined as CommandEnv says, in place of this process; it
// returns only on failure. The command is opened once and run by that descriptor (execveat), so what is allowed
// and what runs are one file. It is for a helper process about to be replaced: everything is done on one locked
// thread, whose credentials the command inherits, in this order:
//
//   - the command's file is opened; named outside its session, it gets a rule of its own (that file, to read and
//     run, never its folder); named inside, the session's rule covers it, so a link there leads nowhere else;
//   - the Landlock ruleset is built from descriptors, each checked against Command's guarded folders;
//   - every capability goes, the bounding set's too (command_caps.go);
//   - no_new_privs, then Landlock (with its signal and abstract-socket scopes), then the seccomp filter
//     (command_filter.go): no terminal injection, no unix socket outside the sandbox.
func ExecFromEnv(argv []string) error {
	v, ok := os.LookupEnv(CommandEnv)
	if !ok {
		return errors.New("internal: no Landlock asked for")
	}
	os.Unsetenv(CommandEnv)
	var c Command
	if err := json.Unmarshal([]byte(v), &c); err != nil {
		return fmt.Errorf("%s: %w", CommandEnv, err)
	}
	if len(argv) == 0 {
		return errors.New("internal: no command")
	}
	if err := Supported(); err != nil {
		return fmt.Errorf("--landlock: %w", err)
	}
	abi := ABI()
	// From here on one thread does it all: the restrictions below are this thread's, and the exec its own.
	runtime.LockOSThread()
	debug.SetGCPercent(-1) // no collector threads started while the process is about to be replaced

	exe, outside, err := openCommand(c, argv[0])
	if err != nil {
		return err
	}
	rs, err := c.ruleset(abi, exe, outside)
	if err != nil {
		return fmt.Errorf("--landlock: %w", err)
	}
	filter, err := commandFilter(abi)
	if err != nil {
		return fmt.Errorf("--landlock: seccomp: %w", err)
	}
	if err := dropAllCaps(); err != nil {
		return fmt.Errorf("--landlock: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("--landlock: no_new_privs: %w", err)
	}
	if err := restrictThread(rs); err != nil {
		return fmt.Errorf("--landlock: %w", err)
	}
	if err := loadThreadFilter(filter); err != nil {
		return fmt.Errorf("--landlock: seccomp: %w", err)
	}
	return execFd(exe, argv, os.Environ())
}
