package bind

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrMountChanging is a session's folder on the mount that the daemon invalidated under every bind LaySession tried
// (the session's own writes change it); a retry is likely to succeed.
var ErrMountChanging = errors.New("the session's folder on the mount changed under every bind (retry)")

// ErrNotOnMount is a session's folder that cannot be opened on the mount beneath its root with no symlink (gone,
// or answered as a link by a daemon that lies).
var ErrNotOnMount = errors.New("the session's folder on the mount")

// layTries bounds how often LaySession opens the session's folder on the mount again when the kernel dropped the
// name it opened before the bind landed (the daemon invalidates a session's entry when its folders change).
const layTries = 5

// LaySession lays session id at the folder open at dst (OpenPlace's descriptor) as a run sees /session: the
// session's folder from the mount (mountRoot: the mount's root), so every cwd's transcript folder is a view, with
// the store's own RunDirs (beneath store: the session's folder in the store) bound over it at the disk's speed.
// It is the one way a session is handed to something that follows paths as root (the engine, the kubelet): every
// end is held by descriptor, opened with no symlink and no mount crossed, so a session that swaps a folder for a
// link or a FIFO, or a daemon that answers a link, gets nothing mounted. Each mount is nosuid and nodev (and
// read-only with ReadOnly). The store's folders are opened first; a failure part-way detaches what was made.
// The returned Mount is the session's folder laid at dst; Detach takes it down with the binds beneath it.
//
// With sub (a relative path within the session, "" for all of it), only that folder is laid: from the store when
// it is one of MountDirs or beneath one (as the mount shows it), else from the mount (.claude and its views).
// Either way it is reached with no symlink and no mount crossed: a sub the session made a link is refused.
func LaySession(mountRoot, store int, id, sub string, dst int, f Flags) (*Mount, error) {
	if sub != "" {
		return laySub(mountRoot, store, id, sub, dst, f)
	}
	srcs := make([]int, 0, len(RunDirs))
	defer func() {
		for _, fd := range srcs {
			unix.Close(fd)
		}
	}()
	for _, rel := range RunDirs {
		fd, err := OpenFolder(store, rel)
		if errors.Is(err, ErrNotFolder) {
			return nil, fmt.Errorf("the store's %s is %w", rel, ErrNotFolder)
		}
		if err != nil {
			return nil, fmt.Errorf("the store's %s: %w", rel, err)
		}
		srcs = append(srcs, fd)
	}
	top, err := attachFromMount(mountRoot, id, dst, f)
	if err != nil {
		return nil, err
	}
	for i, rel := range RunDirs {
		if err := attachBeneath(srcs[i], top.Fd(), rel, f); err != nil {
			_ = top.Detach()
			return nil, fmt.Errorf("bind the store's %s over it: %w", rel, err)
		}
	}
	return top, nil
}

// attachBeneath binds the folder open at src over rel beneath top (the session just laid: no symlink, no mount
// crossed), opening rel again while the daemon drops it (attachOpened).
func attachBeneath(src, top int, rel string, f Flags) error {
	m, err := attachOpened(func() (int, error) { return OpenPlace(top, rel) },
		func(place int) (*Mount, error) { return Attach(src, place, f) })
	if err == nil {
		m.Close()
	}
	return err
}

// attachFromMount binds sessions/<id> of the mount at dst, opening it again while the daemon drops it
// (attachOpened).
func attachFromMount(mountRoot int, id string, dst int, f Flags) (*Mount, error) {
	return attachOpened(func() (int, error) {
		src, err := OpenPlace(mountRoot, "sessions/"+id)
		if err != nil {
			return -1, fmt.Errorf("%w: %w", ErrNotOnMount, err)
		}
		return src, nil
	}, func(src int) (*Mount, error) { return Attach(src, dst, f) })
}

// attachOpened opens a name on the mount (open) and binds with it (attach), and does both again, a few times,
// when the daemon invalidated the name in between: move_mount then fails with ENOENT (its dentry was unhashed,
// as the daemon does when a session's folders change), and the session's own writes must not fail a container's
// start.
func attachOpened(open func() (int, error), attach func(fd int) (*Mount, error)) (*Mount, error) {
	for try := 1; ; try++ {
		fd, err := open()
		if err != nil {
			return nil, err
		}
		m, err := attach(fd)
		unix.Close(fd)
		if err == nil || !errors.Is(err, unix.ENOENT) {
			return m, err
		}
		if try == layTries {
			return nil, fmt.Errorf("%w (%d tries): %w", ErrMountChanging, try, err)
		}
	}
}

// laySub binds folder sub of session id at dst (LaySession with a sub).
func laySub(mountRoot, store int, id, sub string, dst int, f Flags) (*Mount, error) {
	top, _, _ := strings.Cut(sub, "/")
	if IsMountDir(top) {
		src, err := OpenFolder(store, sub)
		if errors.Is(err, ErrNotFolder) {
			return nil, fmt.Errorf("the store's %s is %w", sub, ErrNotFolder)
		}
		if err != nil {
			return nil, fmt.Errorf("the store's %s: %w", sub, err)
		}
		defer unix.Close(src)
		return Attach(src, dst, f)
	}
	src, err := OpenPlace(mountRoot, "sessions/"+id+"/"+sub)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EXDEV) {
		return nil, fmt.Errorf("%s on the mount is %w", sub, ErrNotFolder)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNotOnMount, sub, err)
	}
	defer unix.Close(src)
	return Attach(src, dst, f)
}
