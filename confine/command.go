package confine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Command is what a command sessionfs starts on this host may reach when its user asks for Landlock (exec
// --landlock, run --backend local --landlock): the system's programs and libraries to read and run, a few
// devices, its session's folder, a TMPDIR of its own, and only what the user adds. Everything else (the user's home, other
// sessions, the store, keys, /etc's secrets) is refused by the kernel, to root too, whatever path or link leads there.
type Command struct {
	RW []string `json:"rw"` // folders (or files) it may read, write, make and remove in, and run from
	RO []string `json:"ro"` // folders (or files) it may read and run from
}

// CommandEnv carries a Command, as JSON, to the helper that restricts itself and then execs the command; the
// helper takes it out of the environment first.
const CommandEnv = "SESSIONFS_LANDLOCK"

// systemRO are the system's folders a command reads and runs from: programs, libraries, /proc and /sys (a
// program's own /proc/self, CPU and memory limits), the resolver's stub (/etc/resolv.conf links there). Landlock
// keeps /proc's other processes from it (their environ, mem, fds need ptrace rights across its domain).
var systemRO = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/proc", "/sys",
	"/run/systemd/resolve"}

// settings is the system's settings folder, read as any user may read it (ReadableByAll): not its secrets.
const settings = "/etc"

// homeRO are the user's settings a command reads below $HOME: git's (git refuses to run when it may not read
// ~/.gitconfig; a missing one is fine).
var homeRO = []string{".gitconfig", ".config/git"}

// devices are the device files a command writes and reads: no disk, no memory.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}

// sharedRW are the folders every command may write in: terminals and POSIX shared memory. Not /tmp, which holds
// other programs' files (a store or a mount there, even): the run gets a TMPDIR of its own (backends/local).
var sharedRW = []string{"/dev/pts", "/dev/shm"}

// Check reports a path the user asked for that is missing or not absolute: refused, rather than a rule left out.
func (c Command) Check() error {
	for _, p := range append(slices.Clone(c.RW), c.RO...) {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("--allow %s: want an absolute path", p)
		}
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("--allow %s: %w", p, err)
		}
	}
	return nil
}

// Encode is c as CommandEnv carries it.
func (c Command) Encode() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// RestrictFromEnv restricts the calling process (every thread; it is about to exec the command) as CommandEnv
// asks, and takes CommandEnv out of the environment. Without CommandEnv it does nothing.
func RestrictFromEnv() error {
	v, ok := os.LookupEnv(CommandEnv)
	if !ok {
		return nil
	}
	os.Unsetenv(CommandEnv)
	var c Command
	if err := json.Unmarshal([]byte(v), &c); err != nil {
		return fmt.Errorf("%s: %w", CommandEnv, err)
	}
	return c.restrict()
}

func (c Command) restrict() error {
	if ABI() < 1 {
		return fmt.Errorf("--landlock: %w", ErrNoLandlock)
	}
	etcDirs, etcFiles := ReadableByAll(settings)
	rules := []landlock.Rule{
		landlock.RODirs(systemRO...).IgnoreIfMissing(),
		landlock.RODirs(etcDirs...).IgnoreIfMissing(),
		landlock.ROFiles(etcFiles...).IgnoreIfMissing(),
		// Its folders may be listed (a secret's name is no secret): programs that list /etc keep working.
		landlock.PathAccess(llsys.AccessFSReadDir, settings).IgnoreIfMissing(),
		landlock.RWFiles(devices...).WithIoctlDev().IgnoreIfMissing(),
		landlock.RWDirs(sharedRW...).WithIoctlDev().IgnoreIfMissing(),
	}
	if home, err := os.UserHomeDir(); err == nil {
		for _, rel := range homeRO {
			p := filepath.Join(home, rel)
			rules = append(rules, pathRule(p, landlock.RODirs(p), landlock.ROFiles(p)).IgnoreIfMissing())
		}
	}
	for _, p := range c.RW {
		rules = append(rules, pathRule(p, landlock.RWDirs(p).WithRefer(), landlock.RWFiles(p)))
	}
	for _, p := range c.RO {
		rules = append(rules, pathRule(p, landlock.RODirs(p), landlock.ROFiles(p)))
	}
	if err := landlock.V7.BestEffort().RestrictPaths(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

// pathRule is dir for a folder, file for anything else (a folder's rights on a file are refused).
func pathRule(p string, dir, file landlock.FSRule) landlock.FSRule {
	if st, err := os.Stat(p); err == nil && !st.IsDir() {
		return file
	}
	return dir
}
