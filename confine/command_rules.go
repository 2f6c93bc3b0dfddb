package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// The rights a command's rules grant (Landlock's names). Making a block or character device is granted nowhere:
// a node made in a folder the command may write would open the raw disk, to root, whatever Landlock says of the
// files on it.
const (
	readRunFile = ll.AccessFSExecute | ll.AccessFSReadFile
	readRunDir  = readRunFile | ll.AccessFSReadDir
	workFile    = readRunFile | ll.AccessFSWriteFile | ll.AccessFSTruncate
	workDir     = readRunDir | workFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeDir |
		ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeSym | ll.AccessFSRefer |
		ll.AccessFSResolveUnix
	deviceFile = ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
	// The rights a rule on a file (not a folder) may hold; the kernel refuses the others there.
	fileRights = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
)

// resolveUnixABI is the Landlock ABI that governs connecting to pathname unix sockets (Linux 6.19?): with it
// the rules say which sockets the command reaches, and the seccomp filter need not refuse them all.
const resolveUnixABI = 9

// handledFS are the filesystem rights the kernel's ABI knows: all handled, so each is refused unless a rule
// grants it.
func handledFS(abi int) uint64 {
	h := uint64(1<<13 - 1) // ABI 1: execute ... make_sym
	if abi >= 2 {
		h |= ll.AccessFSRefer
	}
	if abi >= 3 {
		h |= ll.AccessFSTruncate
	}
	if abi >= 5 {
		h |= ll.AccessFSIoctlDev
	}
	if abi >= resolveUnixABI {
		h |= ll.AccessFSResolveUnix
	}
	return h
}

// ruleset builds c's Landlock ruleset from descriptors: each path is opened once, checked (guard), and the rule
// made on that descriptor, so a name swapped after the check changes nothing. exe is the command's file; with
// outside it gets a rule of its own.
func (c Command) ruleset(abi int, exe int, outside bool) (int, error) {
	handled := handledFS(abi)
	rs, err := ll.LandlockCreateRuleset(&ll.RulesetAttr{HandledAccessFS: handled,
		Scoped: ll.ScopeAbstractUnixSocket | ll.ScopeSignal}, 0)
	if err != nil {
		return -1, fmt.Errorf("landlock: %w", err)
	}
	g, err := newGuard(c)
	if err != nil {
		unix.Close(rs)
		return -1, err
	}
	b := &rules{fd: rs, handled: handled, guard: g}
	etcDirs, etcFiles := ReadableByAll(settings)
	for _, p := range systemRO {
		b.add(p, p, readRunDir, 0, optional)
	}
	for _, p := range append(etcDirs, etcFiles...) {
		b.add(p, p, readRunDir, readRunFile, optional)
	}
	// Its folders may be listed (a secret's name is no secret): programs that list /etc keep working.
	b.add(settings, settings, ll.AccessFSReadDir, 0, optional)
	for _, p := range devices {
		b.add(p, p, 0, deviceFile, optional)
	}
	for _, p := range sharedRW {
		b.add(p, p, workDir|ll.AccessFSIoctlDev, 0, optional)
	}
	b.addTerminals()
	if c.Home != "" {
		for _, rel := range homeRO {
			p := filepath.Join(c.Home, rel)
			b.add(p, p, readRunDir, readRunFile, optional)
		}
	}
	for _, p := range c.RW {
		b.add("--allow "+p, p, workDir, workFile, required)
	}
	for _, p := range c.RO {
		b.add("--allow-read "+p, p, readRunDir, readRunFile, required)
	}
	if outside {
		b.addFd("the command", exe, 0, readRunFile)
	}
	if b.err != nil {
		unix.Close(rs)
		return -1, b.err
	}
	return rs, nil
}

// terminals is where a command opens the terminals it makes (node-pty in gemini's and qwen's CLIs opens
// /dev/ptmx, then the /dev/pts/N it names).
const terminals = "/dev/pts"

// addTerminals grants the run's own /dev/pts: a devpts instance the run's namespace mounted (backends/local), in
// which the command sees only the terminals it opens. A /dev/pts that lists a terminal already is the host's,
// where every login's terminal is (to read what is typed there, or write a fake prompt into it): no rule then.
// The command's stdin, stdout and stderr and /dev/tty (its own terminal) need none.
func (b *rules) addTerminals() {
	if b.err != nil {
		return
	}
	fd, err := unix.Open(terminals, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return // no /dev/pts on this host
	}
	defer unix.Close(fd)
	if ownTerminals(fd) {
		b.addFd(terminals, fd, ll.AccessFSReadDir|deviceFile, 0)
	}
}

// ownTerminals reports whether the folder open at fd is a devpts instance holding no terminal (its ptmx alone):
// one mounted a moment ago, for the run alone.
func ownTerminals(fd int) bool {
	var fs unix.Statfs_t
	if unix.Fstatfs(fd, &fs) != nil || fs.Type != unix.DEVPTS_SUPER_MAGIC {
		return false
	}
	dir, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(dir), terminals)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	return err == nil && len(names) == 1 && names[0] == "ptmx"
}

type need int

const (
	optional need = iota // a system path this host may lack: left out
	required             // what the user or the run asked for: missing is an error
)

// rules adds path-beneath rules to a ruleset, keeping the first error.
type rules struct {
	fd      int
	handled uint64
	guard   *guard
	err     error
}

func (b *rules) add(name, p string, dir, file uint64, n need) {
	if b.err != nil {
		return
	}
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if n == optional && (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)) {
			return
		}
		b.err = fmt.Errorf("%s: %w", name, err)
		return
	}
	defer unix.Close(fd)
	b.addFd(name, fd, dir, file)
}

// addFd grants dir's rights when fd is a folder, file's otherwise (none: no rule).
func (b *rules) addFd(name string, fd int, dir, file uint64) {
	if b.err != nil {
		return
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		b.err = fmt.Errorf("%s: %w", name, err)
		return
	}
	allowed := dir
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		allowed = file & fileRights
	}
	if allowed &= b.handled; allowed == 0 {
		return
	}
	if err := b.guard.check(name, fd); err != nil {
		b.err = err
		return
	}
	if err := ll.LandlockAddPathBeneathRule(b.fd, &ll.PathBeneathAttr{AllowedAccess: allowed, ParentFd: fd}, 0); err != nil {
		b.err = fmt.Errorf("landlock: rule for %s: %w", name, err)
	}
}

// restrictThread enforces the ruleset on the calling thread (no_new_privs must be set) and closes it.
func restrictThread(rs int) error {
	defer unix.Close(rs)
	if err := ll.LandlockRestrictSelf(rs, 0); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

// fileID is a file's identity: Landlock's rules are on inodes, whatever path (a bind mount, a link) leads there.
type fileID struct{ dev, ino uint64 }

func idOf(fd int) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fileID{}, err
	}
	return fileID{st.Dev, st.Ino}, nil
}

// guard refuses rules that would open what the sandbox keeps out. A rule on a folder covers every file whose path
// (as the kernel walks it up, across mounts) passes that folder, so a rule is refused when it is "/" or a folder
// above or at $HOME, the store or the mount (covered), and, when the run's session is known, when it lies in the
// store or the mount but not in the session (another session, the store's own files).
type guard struct {
	covered map[fileID]string // every folder from a guarded one up to "/", and what it would open
	fenced  map[fileID]string // the store's and the mount's roots
	own     map[fileID]bool   // the run's session folder, as the command sees it and in the store
}

func newGuard(c Command) (*guard, error) {
	g := &guard{covered: map[fileID]string{}, fenced: map[fileID]string{}, own: map[fileID]bool{}}
	guarded := []struct{ what, path string }{{"/", "/"}, {"$HOME", c.Home}, {"the store", c.Store}, {"the mount", c.Mount}}
	for _, gp := range guarded {
		if gp.path == "" {
			continue
		}
		fd, err := unix.Open(gp.path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			if gp.what == "$HOME" && errors.Is(err, unix.ENOENT) {
				continue // no home to open
			}
			return nil, fmt.Errorf("%s (%s): %w", gp.what, gp.path, err)
		}
		ids, err := lineage(fd)
		unix.Close(fd)
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", gp.what, gp.path, err)
		}
		what := gp.what
		if gp.path != "/" {
			what = fmt.Sprintf("%s (%s)", gp.what, gp.path)
		}
		for _, id := range ids {
			if _, ok := g.covered[id]; !ok {
				g.covered[id] = what
			}
		}
		if len(c.Session) > 0 && (gp.what == "the store" || gp.what == "the mount") {
			g.fenced[ids[0]] = what
		}
	}
	for _, p := range c.Session {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("the session's folder %s: %w", p, err)
		}
		id, err := idOf(fd)
		unix.Close(fd)
		if err != nil {
			return nil, err
		}
		g.own[id] = true
	}
	return g, nil
}

// check refuses a rule on fd (named name in messages) that the guard forbids.
func (g *guard) check(name string, fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if what, ok := g.covered[fileID{st.Dev, st.Ino}]; ok {
		advice := "allow a folder inside it instead"
		if !strings.HasPrefix(name, "--allow") {
			advice = "every --landlock command reads it: keep the store, the mount and $HOME out of the system's folders"
		}
		return fmt.Errorf("%s covers %s: refused (the command could read all of it); %s", name, what, advice)
	}
	if len(g.fenced) == 0 {
		return nil
	}
	dir := fd
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		var err error
		if dir, err = folderOf(fd, st); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		defer unix.Close(dir)
	}
	ids, err := lineage(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	for _, id := range ids {
		if g.own[id] {
			return nil
		}
		if what, ok := g.fenced[id]; ok {
			return fmt.Errorf("%s lies in %s outside the run's session: refused (another session's files, or the store's own)", name, what)
		}
	}
	return nil
}

// maxDepth bounds a walk up the folders (PATH_MAX allows some 2,048 levels).
const maxDepth = 4096

// lineage is the identity of the folder fd and of each folder above it up to "/", as the kernel walks ".." (across
// mounts, as Landlock walks a path up to find its rules).
func lineage(fd int) ([]fileID, error) {
	cur, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	defer func() { unix.Close(cur) }()
	var ids []fileID
	for range maxDepth {
		id, err := idOf(cur)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
		up, err := unix.Openat(cur, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		unix.Close(cur)
		cur = up
		if upID, err := idOf(up); err != nil {
			return nil, err
		} else if upID == id {
			return ids, nil // "/": its ".." is itself
		}
	}
	return nil, errors.New("folders nested too deep")
}

// folderOf opens the folder that holds the file fd (st), checked to hold that very file still.
func folderOf(fd int, st unix.Stat_t) (int, error) {
	p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		return -1, err
	}
	dir, err := unix.Open(filepath.Dir(p), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var in unix.Stat_t
	if err := unix.Fstatat(dir, filepath.Base(p), &in, unix.AT_SYMLINK_NOFOLLOW); err != nil || in.Dev != st.Dev || in.Ino != st.Ino {
		unix.Close(dir)
		return -1, fmt.Errorf("%s moved while it was checked", p)
	}
	return dir, nil
}
