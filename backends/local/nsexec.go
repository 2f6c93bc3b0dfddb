package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/bind"
	"github.com/sessionfs/sessionfs/confine"
	"github.com/sessionfs/sessionfs/internal/selfexec"
	"github.com/sessionfs/sessionfs/layout"
)

// A run on the mount sees the session at its mounted path, so every cwd's transcript folder is a view of the
// canonical one. Its heavy work would then go through FUSE, several times slower than the disk. So the command
// runs in a private mount namespace in which the store's own folders (bind.RunDirs) are bound over the
// mount's paths: the same paths, the store's speed. The binds are made by a helper, the sessionfs binary itself
// started with selfexec.Nsexec in the new namespace, which then execs the command: as root the namespace is a plain
// private one; as anyone else it is owned by a new user namespace that maps the user to itself (the command
// keeps its uid, and loses the namespace's capabilities at exec). Where neither can be made, the command runs
// on the mount, and the user is told once; but a run with Landlock, which has a namespace always (on the store
// too, started with selfexec.Landlock), and a PID namespace whose init the helper is (sandbox_init.go), is refused
// (sandbox.go).

// helperExit is the helper's own failure, as docker reports its own (the command never ran).
const helperExit = 125

// helperArgs builds the helper's command line: the store's sessions folder, the session id, the session's
// mounted path, the working directory, then the command (its first word already resolved).
func helperArgs(self, sessionsDir, id, mounted, cwd string, argv []string) []string {
	return append([]string{self, selfexec.Nsexec, sessionsDir, id, mounted, cwd, "--"}, argv...)
}

// nsAttr is the namespace the helper is started in; with sandbox (a run with Landlock), a PID namespace too,
// whose init the helper is (sandbox_init.go), killed with all it holds if the CLI dies first.
func nsAttr(sandbox bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS} // Go makes / private in the child
	if os.Geteuid() != 0 {
		uid, gid := os.Getuid(), os.Getgid()
		attr = &syscall.SysProcAttr{
			Cloneflags:   syscall.CLONE_NEWUSER,
			Unshareflags: syscall.CLONE_NEWNS,
			UidMappings:  []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings:  []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
			// The helper keeps its uid, so exec would drop the namespace's capabilities: CAP_SYS_ADMIN is kept
			// ambient for the binds, and cleared before the command is exec'd.
			AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN},
		}
	}
	if sandbox {
		// Owned by the user namespace made in the same clone, for a normal user. (Go's check that the parent still
		// lives compares getppid(), 0 in the new namespace, and sends the child its own SIGKILL: which the kernel
		// never delivers to a namespace's init from inside it.)
		attr.Cloneflags |= syscall.CLONE_NEWPID
		attr.Pdeathsig = syscall.SIGKILL
		// Out of the caller's terminal session: nothing of the sandbox may make its group that terminal's
		// foreground (pty.go); the caller's signals reach it through the CLI alone.
		attr.Setsid = true
	}
	return attr
}

// selfexec.Landlock, as the first argument, makes the sessionfs binary the helper of a run with Landlock on the store
// itself (no binds): started in a mount and a PID namespace of its own (nsAttr), it shapes the mounts for the
// sandbox (sandboxMounts), then runs the command confined as confine.CommandEnv says, as the namespace's init
// (runInit; "--", then the command, its first word already resolved).

// RunHelper runs a helper when os.Args asks for one, and never returns then; otherwise it returns at once.
// main calls it first.
func RunHelper() {
	if len(os.Args) < 2 {
		return
	}
	code, err := 0, error(nil)
	switch os.Args[1] {
	case selfexec.Nsexec:
		code, err = helper(os.Args[2:])
	case selfexec.Landlock:
		code, err = landlocked(os.Args[2:])
	case selfexec.Confine:
		err = confined(os.Args[2:])
	default:
		return
	}
	if err == nil {
		os.Exit(code) // the command's own exit code, as the sandbox's init reports it
	}
	fmt.Fprintf(os.Stderr, "sessionfs: %v\n", err)
	switch {
	case errors.Is(err, unix.ENOENT):
		os.Exit(127) // as a shell says: not found
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.ENOEXEC):
		os.Exit(126) // cannot execute
	}
	os.Exit(helperExit)
}

// helper binds the store's folders over the mount's in its namespace, then execs the command, or with Landlock
// runs it confined as the namespace's init: it returns only then, or on failure.
func helper(args []string) (int, error) {
	if len(args) < 6 || args[4] != "--" {
		return 0, errors.New("internal: bad helper arguments")
	}
	sessionsDir, id, mounted, cwd, argv := args[0], args[1], args[2], args[3], args[5:]
	if err := bindSession(sessionsDir, id, mounted, cwd); err != nil {
		return 0, err
	}
	// Landlock last, in the command's own process: it refuses the binds.
	if _, ok := os.LookupEnv(confine.CommandEnv); ok {
		if err := sandboxMounts(); err != nil {
			return 0, err
		}
		return runInit(argv)
	}
	// The command gets no capability: the ambient set is cleared on the thread that execs.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return 0, fmt.Errorf("drop capabilities: %w", err)
	}
	if err := unix.Exec(argv[0], argv, os.Environ()); err != nil {
		return 0, fmt.Errorf("run %s: %w", argv[0], err)
	}
	return 0, nil
}

// bindSession binds the store's folders of session id (in sessionsDir) over its folders on the mount (mounted),
// then moves into cwd, beneath the session on the mount.
func bindSession(sessionsDir, id, mounted, cwd string) error {
	if err := layout.ValidateID(id); err != nil {
		return err
	}
	sessions, err := layout.OpenDir(sessionsDir)
	if err != nil {
		return err
	}
	defer sessions.Close()
	sess, err := sessions.Sub(id)
	if err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	defer sess.Close()
	onMount, err := openMounted(mounted, id)
	if err != nil {
		return err
	}
	defer unix.Close(onMount)
	var flags bind.Flags
	var fs unix.Statfs_t
	if err := unix.Fstatfs(onMount, &fs); err == nil && fs.Flags&unix.ST_RDONLY != 0 {
		flags |= bind.ReadOnly // a read-only mount's folders stay read-only through the binds
	}
	for _, rel := range bind.RunDirs {
		if err := bindOver(sess, onMount, rel, flags); err != nil {
			return err
		}
	}
	// The cwd was the mount's folder; taken again beneath the session, with no symlink, it is the bind laid over it.
	return chdirBeneath(onMount, mounted, cwd)
}

// landlocked runs the command confined as confine.CommandEnv says, as the init of the namespaces it was started
// in: a run with Landlock on the store itself (no mount).
func landlocked(args []string) (int, error) {
	if len(args) < 2 || args[0] != "--" {
		return 0, errors.New("internal: bad helper arguments")
	}
	if err := sandboxMounts(); err != nil {
		return 0, err
	}
	return runInit(args[1:])
}

// openMounted opens the session's folder on the mount, mounted (<mnt>/sessions/<id>), beneath the mount's root
// with no symlink and no mount crossed: the mountpoint is the user's, what lies beneath it the session's.
func openMounted(mounted, id string) (int, error) {
	mnt := filepath.Dir(filepath.Dir(mounted))
	if filepath.Join(mnt, "sessions", id) != filepath.Clean(mounted) {
		return -1, fmt.Errorf("internal: %s is not session %s of a mount", mounted, id)
	}
	root, err := unix.Open(mnt, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("the mount %s: %w", mnt, err)
	}
	defer unix.Close(root)
	fd, err := bind.OpenPlace(root, "sessions/"+id)
	if err != nil {
		return -1, fmt.Errorf("session %s on the mount %s: %w", id, mnt, err)
	}
	return fd, nil
}

// bindOver binds the store's folder rel of the session (sess) over the mount's folder rel of it (beneath onMount),
// both opened with no symlink and no mount crossed (package bind). A folder the mount's daemon bound there already
// (the same store folder) is left as it is.
func bindOver(sess *layout.Dir, onMount int, rel string, flags bind.Flags) error {
	src, err := bind.OpenFolder(sess.Fd(), rel)
	if err != nil {
		if errors.Is(err, bind.ErrNotFolder) {
			return fmt.Errorf("%s/%s is not a folder of the session (a symlink or a file): refusing to run with it", sess.Name(), rel)
		}
		return fmt.Errorf("%s/%s: %w", sess.Name(), rel, err)
	}
	defer unix.Close(src)
	dst, err := bind.OpenPlace(onMount, rel)
	if errors.Is(err, unix.EXDEV) && bind.Shows(onMount, rel, src) {
		return nil // the daemon's bind of this very folder: native already
	}
	if err != nil {
		return fmt.Errorf("the mount's %s of session %s is not a folder of it (a symlink, a file or a foreign mount): refusing to run with it: %w", rel, filepath.Base(sess.Name()), err)
	}
	defer unix.Close(dst)
	m, err := bind.Attach(src, dst, flags)
	if err != nil {
		return fmt.Errorf("bind %s/%s over the mount: %w", sess.Name(), rel, err)
	}
	m.Close()
	return nil
}

// chdirBeneath moves into cwd, a folder beneath the session's folder on the mount (mounted, open at onMount),
// reached beneath it with no symlink: a name the session swapped for a link is refused, never followed.
func chdirBeneath(onMount int, mounted, cwd string) error {
	rel, err := filepath.Rel(mounted, cwd)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Errorf("working directory %s: outside the session", cwd)
	}
	fd, err := layout.OpenBeneath(onMount, rel, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return fmt.Errorf("working directory %s: %w", cwd, err)
	}
	defer unix.Close(fd)
	if err := unix.Fchdir(fd); err != nil {
		return fmt.Errorf("working directory %s: %w", cwd, err)
	}
	return nil
}
