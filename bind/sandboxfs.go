package bind

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Two filesystems of a sandboxed run's own, mounted in its private mount namespace (backends/local) over the
// host's: the host's /proc listed every process of the host (their command lines), and its /dev/shm is one
// tmpfs every program of the host writes in (a 0600 file of root's there was root's sandbox's to read, and the
// sandbox planted files for the host's programs to find).

// Processes mounts a procfs of the calling process's PID namespace onto the folder open at place (a sandboxed
// run's /proc): called by the init of a run's own PID namespace, it shows that run's processes alone. It is
// nosuid, nodev and noexec, as the host's /proc is (a user namespace's mount of it may not be less so).
func Processes(place int) (*Mount, error) {
	return mountNew("proc", nil, nil, sealed, place)
}

// SharedMemory mounts an empty tmpfs of at most size (tmpfs's size=: bytes with a k, m or g, or a percentage of
// the memory) onto the folder open at place (a sandboxed run's /dev/shm), open to all as /dev/shm is (1777), and
// nosuid, nodev and noexec. It lives as long as the mount namespace does.
func SharedMemory(place int, size string) (*Mount, error) {
	return mountNew("tmpfs", nil, [][2]string{{"size", size}, {"mode", "1777"}}, sealed, place)
}

// sealed are the mount flags of a filesystem of a sandbox's own that holds no program and no device.
const sealed = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC

// mountNew mounts a new instance of the filesystem fstype, with the flag options flags and the options options,
// onto the folder open at place, with the mount flags attrs (fsopen, fsconfig, fsmount, then AttachTo).
func mountNew(fstype string, flags []string, options [][2]string, attrs int, place int) (*Mount, error) {
	fs, err := unix.Fsopen(fstype, unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("fsopen %s: %w", fstype, err)
	}
	defer unix.Close(fs)
	for _, f := range flags {
		if err := unix.FsconfigSetFlag(fs, f); err != nil {
			return nil, fmt.Errorf("%s %s: %w", fstype, f, err)
		}
	}
	for _, o := range options {
		if err := unix.FsconfigSetString(fs, o[0], o[1]); err != nil {
			return nil, fmt.Errorf("%s %s=%s: %w", fstype, o[0], o[1], err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return nil, fmt.Errorf("%s: %w", fstype, err)
	}
	mfd, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, attrs)
	if err != nil {
		return nil, fmt.Errorf("fsmount %s: %w", fstype, err)
	}
	id, err := MountID(mfd)
	if err != nil {
		unix.Close(mfd)
		return nil, err
	}
	t := &Tree{fd: mfd, id: id}
	return t.AttachTo(place)
}
