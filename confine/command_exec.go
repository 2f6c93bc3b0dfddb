package confine

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openCommand opens the file the command names, once: the rule made for it (if any) and the exec are that file,
// whatever the name leads to a moment later. The descriptor is not close-on-exec: a #! script's interpreter is
// given it as /dev/fd/N and reads the script through it (the rules must let it read the file: the session's,
// the system's or the command's own rule do). outside says the name lies outside the run's session, the store
// and the mount, so the file gets a rule of its own (to read and run it, never its folder): a name inside the
// session is the session's to change, and is run only if the session's or the system's rules allow the file it
// leads to. A relative name is resolved from the working folder, which lies in the session.
func openCommand(c Command, name string) (fd int, outside bool, err error) {
	fd, err = unix.Open(name, unix.O_PATH, 0)
	if err != nil {
		return -1, false, fmt.Errorf("run %s: %w", name, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, false, fmt.Errorf("run %s: %w", name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, false, fmt.Errorf("run %s: not a file: %w", name, unix.EACCES)
	}
	return fd, !namedInside(c, name), nil
}

// namedInside reports whether name lies, as written or cleaned, in the run's session, the store or the mount.
func namedInside(c Command, name string) bool {
	if !filepath.IsAbs(name) {
		return true
	}
	for _, root := range append(slices.Clone(c.Session), c.Store, c.Mount) {
		if root != "" && (within(root, name) || within(root, filepath.Clean(name))) {
			return true
		}
	}
	return false
}

// within reports whether p is root or lies beneath it, by name.
func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
}

// execFd replaces this process with the file open at fd (execveat with AT_EMPTY_PATH), as argv with env. It
// returns only on failure.
func execFd(fd int, argv, env []string) error {
	argvp, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return err
	}
	envp, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return err
	}
	empty, err := syscall.BytePtrFromString("")
	if err != nil {
		return err
	}
	_, _, errno := syscall.RawSyscall6(unix.SYS_EXECVEAT, uintptr(fd), uintptr(unsafe.Pointer(empty)),
		uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])), unix.AT_EMPTY_PATH, 0)
	return fmt.Errorf("run %s: %w", argv[0], errno)
}
