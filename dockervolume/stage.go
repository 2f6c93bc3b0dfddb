package dockervolume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/bind"
)

// The engine binds a volume's mountpoint by path, as root, following symlinks. A session's folder on the mount is
// the daemon's to answer and the session's to fill, so neither path is handed over: Mount lays the session (the
// mount's folder, the store's folders over it: bind.LaySession, every end held by descriptor) on a folder of its
// own under StageRoot, which only root reaches, and the engine binds that. A container's bind is its own copy
// (rprivate): the stage is taken down when the last container unmounts, and the containers keep their /session.

// StageRoot holds each plugin's stages: StageRoot/<plugin>/<session id>.
const StageRoot = "/run/sessionfs/volumes"

// staged is a session laid for the engine: the mount id of the stage, which Unmount detaches.
type staged struct{ mountID uint64 }

// openStage opens the driver's stage folder, made root's alone (0700) if need be. Its parents are root's; its
// last name is not followed if it is a link.
func (d *Driver) openStage() (int, error) {
	if err := os.MkdirAll(d.Stage, 0o700); err != nil {
		return -1, err
	}
	fd, err := unix.Open(d.Stage, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("the stage folder %s: %w", d.Stage, err)
	}
	return fd, nil
}

// lay lays session name (its folder sub, "" for all of it) on its stage folder. A stage left there (by a helper that
// was killed) is detached first: only what this driver lays is handed to the engine.
func (d *Driver) lay(name, sub string) (st *staged, err error) {
	dir, err := d.openStage()
	if err != nil {
		return nil, err
	}
	defer unix.Close(dir)
	if err := unix.Mkdirat(dir, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("stage %s: %w", name, err)
	}
	defer func() {
		if err != nil { // nothing laid: no folder left either
			_ = unix.Unlinkat(dir, name, unix.AT_REMOVEDIR)
		}
	}()
	place, err := bind.OpenPlace(dir, name)
	if errors.Is(err, unix.EXDEV) { // a stage of before
		_ = detachStage(dir, name)
		place, err = bind.OpenPlace(dir, name)
	}
	if err != nil {
		return nil, fmt.Errorf("stage %s: %w", name, err)
	}
	defer unix.Close(place)
	root, err := unix.Open(d.Mountpoint, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("the sessionfs mount at %s: %w", d.Mountpoint, err)
	}
	defer unix.Close(root)
	sess, err := d.Store.OpenSession(name)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", name, err)
	}
	defer sess.Close()
	var flags bind.Flags
	var fs unix.Statfs_t
	if err := unix.Fstatfs(root, &fs); err == nil && fs.Flags&unix.ST_RDONLY != 0 {
		flags = bind.ReadOnly // a read-only mount's sessions stay read-only through the binds
	}
	m, err := bind.LaySession(root, sess.Fd(), name, sub, place, flags)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", name, err)
	}
	defer m.Close()
	return &staged{mountID: m.ID}, nil
}

// release takes session name's stage down (lazily: an engine bind in flight keeps its copy) and removes its folder.
func (d *Driver) release(name string, s *staged) error {
	dir, err := d.openStage()
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	if err := bind.DetachAt(dir, name, s.mountID); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("take the stage of %s down: %w", name, err)
	}
	if err := unix.Unlinkat(dir, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove the stage of %s: %w", name, err)
	}
	return nil
}

// Sweep takes down the stages a helper before this one left (its counts are gone with it; the containers keep
// their own binds).
func (d *Driver) Sweep() error {
	dir, err := d.openStage()
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	ents, err := os.ReadDir(d.Stage)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		if err := detachStage(dir, e.Name()); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := unix.Unlinkat(dir, e.Name(), unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("remove the stage %s: %w", filepath.Join(d.Stage, e.Name()), err))
		}
	}
	return errors.Join(errs...)
}

// detachStage detaches whatever is mounted on name beneath the stage folder dir (root's alone: only the driver
// lays anything there).
func detachStage(dir int, name string) error {
	for range 16 { // mounts stacked there, top first

		fd, err := bind.OpenPlace(dir, name)
		if err == nil {
			unix.Close(fd)
			return nil // nothing mounted there (any more)
		}
		if !errors.Is(err, unix.EXDEV) {
			return fmt.Errorf("the stage %s: %w", name, err)
		}
		id, err := shownMountID(dir, name)
		if err != nil {
			return err
		}
		if err := bind.DetachAt(dir, name, id); err != nil {
			return fmt.Errorf("take the stage %s down: %w", name, err)
		}
	}
	return fmt.Errorf("the stage %s: mounts stacked 16 deep", name)
}

// shownMountID is the id of the mount on name beneath dir.
func shownMountID(dir int, name string) (uint64, error) {
	fd, err := unix.Openat(dir, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	return bind.MountID(fd)
}

// ErrNameTaken is a plugin name another sessionfs mount serves on this host.
var ErrNameTaken = errors.New("another sessionfs mount serves the Docker volume plugin of this name (one name, one mount: --docker-volumes=OTHER)")

// Claim makes this process the one server of plugin name on this host, until release (or its exit, an exec
// included: an upgraded helper claims it again): a lock file under StageRoot, root's alone, removed on release. A
// second mount of the same name would take the first one's socket over and sweep its stages; it is refused instead.
func Claim(name string) (release func(), err error) {
	if err := os.MkdirAll(StageRoot, 0o700); err != nil {
		return nil, err
	}
	root, err := unix.Open(StageRoot, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", StageRoot, err)
	}
	lock := name + ".lock"
	for range 16 { // a file its holder removed between our open and our lock: open the new one
		fd, err := unix.Openat(root, lock, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
		if err != nil {
			unix.Close(root)
			return nil, fmt.Errorf("the lock of plugin %s: %w", name, err)
		}
		if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			unix.Close(fd)
			unix.Close(root)
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("%s: %w", name, ErrNameTaken)
			}
			return nil, fmt.Errorf("the lock of plugin %s: %w", name, err)
		}
		var held, named unix.Stat_t
		if unix.Fstat(fd, &held) == nil && unix.Fstatat(root, lock, &named, unix.AT_SYMLINK_NOFOLLOW) == nil &&
			held.Dev == named.Dev && held.Ino == named.Ino {
			return func() {
				_ = unix.Unlinkat(root, lock, 0) // while locked: whoever opens it next opens a new one
				unix.Close(fd)
				unix.Close(root)
			}, nil
		}
		unix.Close(fd)
	}
	unix.Close(root)
	return nil, fmt.Errorf("the lock of plugin %s: replaced 16 times in a row", name)
}
