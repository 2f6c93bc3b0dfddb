package bind

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Flags say how a bind is made.
type Flags uint

const (
	// ReadOnly makes the bind read-only (a read-only mount's folders stay read-only through their binds).
	ReadOnly Flags = 1 << iota
	// Recursive brings along what is mounted inside the folder (the host's root mounted it; a session cannot), as
	// the mount's FUSE view showed it.
	Recursive
)

// Tree is a detached copy of a folder, made and flagged, not yet attached anywhere.
type Tree struct {
	fd int
	id uint64
}

// Clone copies the folder open at src (OpenFolder's descriptor) as a detached tree: nosuid, nodev, private, and
// read-only with ReadOnly. The flags are set on the tree before it is attached, so no path is walked for them.
func Clone(src int, f Flags) (*Tree, error) {
	flags := unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC | unix.AT_EMPTY_PATH
	setFlags := unix.AT_EMPTY_PATH
	if f&Recursive != 0 {
		flags |= unix.AT_RECURSIVE
		setFlags |= unix.AT_RECURSIVE
	}
	fd, err := unix.OpenTree(src, "", uint(flags))
	if err != nil {
		return nil, fmt.Errorf("open_tree: %w", err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Propagation: unix.MS_PRIVATE}
	if f&ReadOnly != 0 {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.MountSetattr(fd, "", uint(setFlags), &attr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("mount_setattr: %w", err)
	}
	id, err := MountID(fd)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &Tree{fd: fd, id: id}, nil
}

// AttachTo attaches the tree onto the folder open at dst (OpenPlace's descriptor). The tree is used up either way.
func (t *Tree) AttachTo(dst int) (*Mount, error) {
	if err := unix.MoveMount(t.fd, "", dst, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		t.Close()
		return nil, fmt.Errorf("move_mount: %w", err)
	}
	m := &Mount{fd: t.fd, ID: t.id}
	t.fd = -1
	return m, nil
}

// Close drops a tree not attached (the kernel frees it).
func (t *Tree) Close() {
	if t.fd >= 0 {
		unix.Close(t.fd)
		t.fd = -1
	}
}

// Attach binds the folder open at src onto the folder open at dst: Clone, then AttachTo.
func Attach(src, dst int, f Flags) (*Mount, error) {
	t, err := Clone(src, f)
	if err != nil {
		return nil, err
	}
	return t.AttachTo(dst)
}

// Mount is a bind made here: the descriptor of its root and its mount id.
type Mount struct {
	fd int
	ID uint64
}

// Fd is the bind's root (O_PATH): a place to open what lies beneath it. It stays owned by m.
func (m *Mount) Fd() int { return m.fd }

// Close forgets the bind's descriptor; the bind stays where it is.
func (m *Mount) Close() {
	if m.fd >= 0 {
		unix.Close(m.fd)
		m.fd = -1
	}
}

// MountID is the id of the mount the descriptor fd is on (the mount table's). DONT_SYNC: the attributes cached
// will do (a mount id is not the filesystem's to answer), so a FUSE mount whose daemon is gone or stuck answers
// at once.
func MountID(fd int) (uint64, error) {
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_MNT_ID, &stx); err != nil {
		return 0, fmt.Errorf("statx: %w", err)
	}
	if stx.Mask&unix.STATX_MNT_ID == 0 {
		return 0, errors.New("the kernel gives no mount id (statx STATX_MNT_ID, Linux 5.8)")
	}
	return stx.Mnt_id, nil
}
