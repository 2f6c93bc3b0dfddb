package bind

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
)

// Detach detaches the bind through its own descriptor, lazily (a process inside keeps its folder), and closes it.
// A bind the kernel detached already (its name was invalidated) is no error.
func (m *Mount) Detach() error {
	if m.fd < 0 {
		return nil
	}
	err := unix.Unmount(fdPath(m.fd, ""), unix.MNT_DETACH)
	m.Close()
	if err != nil && !errors.Is(err, unix.EINVAL) {
		return err
	}
	return nil
}

// At reports whether the place rel beneath root shows the bind (it was not detached meanwhile).
func (m *Mount) At(root int, rel string) bool {
	fd, err := openShownAt(root, rel)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	id, err := MountID(fd)
	return err == nil && id == m.ID
}

// Shows reports whether the place rel beneath root shows the very folder open at src (the same file: a bind of it
// is there already).
func Shows(root int, rel string, src int) bool {
	fd, err := openShownAt(root, rel)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var a, b unix.Stat_t
	return unix.Fstat(fd, &a) == nil && unix.Fstat(src, &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino
}

// openShownAt opens what the place rel beneath root shows: rel's folder reached with no symlink and no mount
// crossed, its last name with no symlink, crossing the mount on it if any.
func openShownAt(root int, rel string) (int, error) {
	dir, name := split(rel)
	parent, err := OpenPlace(root, dir)
	if err != nil {
		return -1, err
	}
	defer unix.Close(parent)
	return openShown(parent, name)
}

// split cuts rel into its folder and its last name.
func split(rel string) (dir, name string) {
	rel = strings.Trim(rel, "/")
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i], rel[i+1:]
	}
	return ".", rel
}

// Release unmounts the bind unless a process uses it (the kernel refuses a plain unmount then), and reports
// whether it is gone. parent is the folder holding the bind under the name name, opened by the caller beneath its
// own root with OpenPlace. The bind's own descriptor would keep it busy, so it is closed first and taken again
// when the bind stays.
func (m *Mount) Release(parent int, name string) (bool, error) {
	if !m.At(parent, name) {
		m.Close() // detached already
		return true, nil
	}
	m.Close()
	err := unmountBeneath(parent, name, 0)
	if err == nil || !errors.Is(err, unix.EBUSY) {
		return true, err
	}
	fd, err := openShown(parent, name)
	if err != nil {
		return true, nil
	}
	if id, err := MountID(fd); err != nil || id != m.ID {
		unix.Close(fd)
		return true, nil
	}
	m.fd = fd
	return false, nil
}

// DetachAt detaches, lazily, the mount with id shown at rel beneath root (a bind the mount table lists, left by a
// daemon that is gone): rel's folder is opened beneath root with no symlink and no mount crossed, so only a mount
// on root's own filesystem, of that id, is detached.
func DetachAt(root int, rel string, id uint64) error {
	dir, name := split(rel)
	parent, err := OpenPlace(root, dir)
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	fd, err := openShown(parent, name)
	if err != nil {
		return err
	}
	got, err := MountID(fd)
	unix.Close(fd)
	if err != nil {
		return err
	}
	if got != id {
		return fmt.Errorf("%s shows mount %d, not %d: left alone", rel, got, id)
	}
	return unmountBeneath(parent, name, unix.MNT_DETACH)
}

// openShown opens what the single name shows beneath the folder parent: the mount on it, if any (a mount is
// crossed at the last name only, never a symlink).
func openShown(parent int, name string) (int, error) {
	if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
		return -1, unix.EINVAL
	}
	return layout.OpenBeneath(parent, name, unix.O_PATH|unix.O_DIRECTORY, 0)
}

// unmountBeneath unmounts what is mounted on the single name beneath the folder parent. umount(2) takes only a
// path: it is given the descriptor's magic link and the one name, not followed if it is a symlink, so the walk
// starts at parent and ends one name below it.
func unmountBeneath(parent int, name string, flags int) error {
	if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
		return unix.EINVAL
	}
	return unix.Unmount(fdPath(parent, name), flags|unix.UMOUNT_NOFOLLOW)
}

// fdPath is the magic link of descriptor fd, with name below it when given.
func fdPath(fd int, name string) string {
	p := fmt.Sprintf("/proc/self/fd/%d", fd)
	if name != "" {
		p += "/" + name
	}
	return p
}
