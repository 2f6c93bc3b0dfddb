package bind

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// A sandboxed run's mount namespace honours device nodes on /dev alone (backends/local): Landlock refuses making
// one, but a node the session's folder holds already (planted by a container that may make them, or copied in
// from an archive) opens the raw disk to root unless its mount is nodev. Mount flags are per mount, and the
// namespace's mounts are copies: nothing here changes the host's.

// NoDevicesBeneath makes the mount whose root is open at root, and every mount beneath it, nodev and nosuid
// (one call, all or none).
func NoDevicesBeneath(root int) error {
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOSUID}
	if err := unix.MountSetattr(root, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("mount_setattr nodev,nosuid: %w", err)
	}
	return nil
}

// AllowDevices lets the mount whose root is open at fd (that mount alone, not those beneath it) open device
// nodes again. A mount that was nodev before NoDevicesBeneath must be left so: where the namespace is a user
// namespace's the kernel refuses (EPERM), and as root it would open what the host closed.
func AllowDevices(fd int) error {
	attr := unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_NODEV}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return fmt.Errorf("mount_setattr dev: %w", err)
	}
	return nil
}

// HonoursDevices reports whether the mount the file open at fd lies on opens device nodes (it is not nodev).
func HonoursDevices(fd int) (bool, error) {
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return false, fmt.Errorf("statfs: %w", err)
	}
	return fs.Flags&unix.ST_NODEV == 0, nil
}

// IsMountRoot reports whether the file open at fd is the root of a mount (a folder or a file mounted there).
func IsMountRoot(fd int) (bool, error) {
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, 0, &stx); err != nil {
		return false, fmt.Errorf("statx: %w", err)
	}
	if stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0 {
		return false, fmt.Errorf("statx: the kernel does not say which files are mount roots (Linux 5.8+)")
	}
	return stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, nil
}
