package csi

import (
	"errors"
	"path/filepath"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sessionfs/sessionfs/bind"
)

// publish lays session id at target as `sessionfs run --backend docker` lays it at /session: the session's
// folder from the node's mount (so .claude's views work for any cwd), with the store's own workspace, app and
// mcps bound over it (native speed). Every end is held by descriptor: the mount's folder opened beneath the
// mount's root with no symlink followed, the store's folders beneath the session's, the target with no symlink
// in its last name; so a session that swaps a folder for a link or a FIFO gets nothing mounted, and a target
// that is a link is refused. Each mount is nosuid and nodev (and read-only when asked). A failure part-way
// unmounts what was made.
func (d *Driver) publish(id, target string, ro bool) error {
	tfd, err := openTarget(target)
	if err != nil {
		return err
	}
	defer unix.Close(tfd)
	root, err := unix.Open(d.Mountpoint, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return status.Errorf(codes.FailedPrecondition, "the sessionfs mount at %s: %v", d.Mountpoint, err)
	}
	defer unix.Close(root)
	sess, err := d.Store.OpenSession(id)
	if err != nil {
		return status.Errorf(codes.FailedPrecondition, "session %s: %v", id, err)
	}
	defer sess.Close()
	// The store's folders first, so a hostile one fails before anything is mounted.
	var srcs []int
	defer func() {
		for _, fd := range srcs {
			unix.Close(fd)
		}
	}()
	for _, rel := range bind.RunDirs {
		fd, err := bind.OpenFolder(sess.Fd(), rel)
		if err != nil {
			if errors.Is(err, bind.ErrNotFolder) {
				return status.Errorf(codes.FailedPrecondition, "session %s: %s is not a folder of the session (a symlink or a file): refusing to publish it", id, rel)
			}
			return status.Errorf(codes.FailedPrecondition, "session %s: %s: %v", id, rel, err)
		}
		srcs = append(srcs, fd)
	}
	var flags bind.Flags
	if ro {
		flags = bind.ReadOnly
	}
	top, err := d.attachSession(root, id, target, tfd, flags)
	if err != nil {
		return err
	}
	defer top.Close()
	for i, rel := range bind.RunDirs {
		// Beneath the session just mounted (top is its root), no symlink, no mount crossed.
		dst, err := bind.OpenPlace(top.Fd(), rel)
		if err == nil {
			var m *bind.Mount
			m, err = bind.Attach(srcs[i], dst, flags)
			unix.Close(dst)
			if err == nil {
				m.Close()
			}
		}
		if err != nil {
			_ = unpublish(target)
			return status.Errorf(codes.Internal, "bind session %s's %s at %s: %v", id, rel, target, err)
		}
	}
	return nil
}

// attachTries bounds how often publish opens the session's folder on the mount again when the kernel dropped
// the name it opened before the bind landed (the daemon invalidates a session's entry when its folders change).
const attachTries = 5

// attachSession binds the session's folder from the mount at tfd. A folder opened, then invalidated by the daemon
// before move_mount (ENOENT: its dentry was unhashed) is opened again, a few times: the session's own writes must
// not fail a pod's start. Any other error, or the last ENOENT, is the session's on the mount.
func (d *Driver) attachSession(root int, id, target string, tfd int, flags bind.Flags) (*bind.Mount, error) {
	for try := 1; ; try++ {
		sfd, err := bind.OpenPlace(root, "sessions/"+id)
		if err != nil {
			return nil, status.Errorf(codes.FailedPrecondition, "session %s on the mount %s: %v", id, d.Mountpoint, err)
		}
		top, err := bind.Attach(sfd, tfd, flags)
		unix.Close(sfd)
		if err == nil {
			return top, nil
		}
		if !errors.Is(err, unix.ENOENT) {
			return nil, status.Errorf(codes.Internal, "mount session %s at %s: %v", id, target, err)
		}
		if try == attachTries {
			return nil, status.Errorf(codes.Unavailable, "session %s on the mount %s changed under %d binds in a row (retry): %v", id, d.Mountpoint, try, err)
		}
	}
}

// openTarget makes the target folder if need be (its parent is the orchestrator's) and opens it with no symlink
// in its last name: a target that is a link, a file or a FIFO is refused.
func openTarget(target string) (int, error) {
	parent, name := filepath.Dir(target), filepath.Base(target)
	pfd, err := unix.Open(parent, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, status.Errorf(codes.FailedPrecondition, "target's folder %s: %v", parent, err)
	}
	defer unix.Close(pfd)
	if err := unix.Mkdirat(pfd, name, 0o750); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, status.Errorf(codes.Internal, "make %s: %v", target, err)
	}
	fd, err := bind.OpenPlace(pfd, name)
	if err != nil {
		return -1, status.Errorf(codes.InvalidArgument, "target %s is not a folder (a symlink, a file, or a mount already): %v", target, err)
	}
	return fd, nil
}
