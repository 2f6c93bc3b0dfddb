package local

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/bind"
)

// A run with Landlock has a mount namespace of its own always, on the store as through the mount (nsAttr; where
// none can be made it is refused, never run without). The helper shapes it before it restricts itself:
//
//   - no mount honours device nodes but /dev and the device files mounted in it, as they did: Landlock refuses
//     making a node, and this makes one the session's folder holds already (planted by a container with
//     CAP_MKNOD bound to the store, or unpacked from an archive) open nothing, whatever path leads to it: the
//     store, the mount, or another mount of the same disk (Landlock's rules are on folders, and any mount of a
//     folder leads into it). Every mount is nosuid too (no_new_privs already makes set-uid files gain nothing);
//   - /dev/pts is a devpts instance of the run's own (bind.Terminals): the command sees the terminals it opens
//     (node-pty's), none of the host's other logins, to read what is typed there or write a fake prompt into
//     it. Its stdin, stdout and stderr and /dev/tty (the run's own pty, when the caller's were a terminal:
//     pty.go) are reached without a name in /dev/pts, and keep working;
//   - /proc is a procfs of the run's PID namespace (bind.Processes): the command sees its own processes and the
//     init, not the host's (their command lines, which may hold a secret);
//   - /dev/shm is an empty tmpfs of the run's own (bind.SharedMemory, at most shmSize, noexec): the host's
//     /dev/shm is every program's, and held files others could read or would trust (a root sandbox read a 0600
//     file of root's there, and planted files).

// shmSize bounds the run's /dev/shm (tmpfs's size=): a quarter of the memory, half of what a host's /dev/shm
// usually allows.
const shmSize = "25%"

// sandboxMounts shapes the run's mount namespace for Landlock (see above). The namespace is the helper's alone:
// every mount changed is its copy, never the host's. The helper must be the init of the run's PID namespace
// (its /proc shows the namespace of the process that mounts it).
func sandboxMounts() error {
	dev, err := unix.Open("/dev", unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("--landlock: /dev: %w", err)
	}
	defer unix.Close(dev)
	keep, err := deviceMounts(dev)
	defer func() {
		for _, fd := range keep {
			unix.Close(fd)
		}
	}()
	if err != nil {
		return fmt.Errorf("--landlock: %w", err)
	}
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("--landlock: /: %w", err)
	}
	defer unix.Close(root)
	if err := bind.NoDevicesBeneath(root); err != nil {
		return fmt.Errorf("--landlock: make the run's mounts nodev: %w", err)
	}
	for _, fd := range keep {
		if err := bind.AllowDevices(fd); err != nil {
			return fmt.Errorf("--landlock: give /dev its devices back: %w", err)
		}
	}
	if err := mountOwn(dev, "pts", false, bind.Terminals); err != nil {
		return fmt.Errorf("--landlock: a /dev/pts of the run's own (devpts newinstance): %w", err)
	}
	if err := mountOwn(root, "proc", false, bind.Processes); err != nil {
		return fmt.Errorf("--landlock: a /proc of the run's own: %w", err)
	}
	// Where the host has no /dev/shm there is nothing shared to hide, and the command gets none either.
	if err := mountOwn(dev, "shm", true, func(place int) (*bind.Mount, error) { return bind.SharedMemory(place, shmSize) }); err != nil {
		return fmt.Errorf("--landlock: a /dev/shm of the run's own (refusing to run with the host's): %w", err)
	}
	return nil
}

// mountOwn mounts a filesystem of the run's own (mount) over the folder name beneath dir, reached with no
// symlink: a link there is refused, since the command's rule would follow it. optional says a name that is
// missing is no error (nothing of the host's to hide there).
func mountOwn(dir int, name string, optional bool, mount func(place int) (*bind.Mount, error)) error {
	place, err := unix.Openat(dir, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if optional && errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s is not a folder: %w", name, err)
	}
	defer unix.Close(place)
	m, err := mount(place)
	if err != nil {
		return err
	}
	m.Close()
	return nil
}

// deviceMounts opens the mounts of /dev (open at dev) that honour device nodes: /dev itself, and the device files
// in it that are mounts of their own (a container's /dev/null, bound from its host's). A /dev that is no mount of
// its own cannot keep its devices while the rest is made nodev: refused.
func deviceMounts(dev int) ([]int, error) {
	root, err := bind.IsMountRoot(dev)
	if err != nil {
		return nil, fmt.Errorf("/dev: %w", err)
	}
	if !root {
		return nil, errors.New("/dev is no filesystem of its own (devtmpfs), so the sandbox cannot keep its devices (/dev/null) while it makes device nodes elsewhere inert: refusing to run")
	}
	var keep []int
	add := func(fd int) error {
		honours, err := bind.HonoursDevices(fd)
		if err != nil || !honours {
			unix.Close(fd)
			return err
		}
		keep = append(keep, fd)
		return nil
	}
	self, err := unix.Dup(dev)
	if err != nil {
		return nil, err
	}
	if err := add(self); err != nil {
		return keep, fmt.Errorf("/dev: %w", err)
	}
	list, err := unix.Openat(dev, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return keep, fmt.Errorf("/dev: %w", err)
	}
	d := os.NewFile(uintptr(list), "/dev")
	defer d.Close()
	ents, err := d.ReadDir(-1)
	if err != nil {
		return keep, fmt.Errorf("/dev: %w", err)
	}
	for _, e := range ents {
		if e.Type()&os.ModeDevice == 0 {
			continue
		}
		fd, err := unix.Openat(dev, e.Name(), unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // gone meanwhile
		}
		if root, err := bind.IsMountRoot(fd); err != nil || !root {
			unix.Close(fd)
			continue
		}
		if err := add(fd); err != nil {
			return keep, fmt.Errorf("/dev/%s: %w", e.Name(), err)
		}
	}
	return keep, nil
}
