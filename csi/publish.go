package csi

import (
	"errors"
	"path/filepath"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sessionfs/sessionfs/bind"
)

// publish lays session id at target as `sessionfs run --backend docker` lays it at /session (bind.LaySession:
// the mount's folder of the session with the store's folders bound over it, every end held by descriptor), onto
// a target opened with no symlink in its last name, so a target that is a link is refused.
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
	var flags bind.Flags
	if ro {
		flags = bind.ReadOnly
	}
	top, err := bind.LaySession(root, sess.Fd(), id, "", tfd, flags)
	switch {
	case errors.Is(err, bind.ErrNotFolder):
		return status.Errorf(codes.FailedPrecondition, "session %s: %v", id, err)
	case errors.Is(err, bind.ErrNotOnMount):
		return status.Errorf(codes.FailedPrecondition, "session %s on the mount %s: %v", id, d.Mountpoint, err)
	case errors.Is(err, bind.ErrMountChanging):
		return status.Errorf(codes.Unavailable, "session %s on the mount %s: %v", id, d.Mountpoint, err)
	case err != nil:
		return status.Errorf(codes.Internal, "session %s: publish at %s: %v", id, target, err)
	}
	top.Close()
	return nil
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
