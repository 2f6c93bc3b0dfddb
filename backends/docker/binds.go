package docker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/bind"
	"github.com/sessionfs/sessionfs/layout"
)

// The engine resolves a bind's source path itself, in the host's namespace, following symlinks, at container
// start. A session's processes may have replaced any folder of it with a symlink to a host folder, so a folder of
// a session is never handed to the engine by its path inside the session. It is opened beneath the session's
// folder with no symlink followed, and then, as root, bound by descriptor (package bind: nosuid, nodev) onto a fresh
// folder under stageRoot that only root can reach: the engine binds that, whatever happens to the name in the session. The
// engine cannot take the descriptor itself (/proc/<pid>/fd/N is a mount of another namespace to runc: EINVAL).
// Without the privilege to mount, the folder is checked (a real folder, reached with no symlink) and its path
// handed over: a rename racing the start could still redirect it.
const stageRoot = "/run/sessionfs/binds"

// stage holds the folders staged for one container.
type stage struct {
	dir    string   // stageRoot/<pid>-<n>, or "" when nothing was mounted
	mounts []string // staged mount points, unmounted by release
}

// source returns what to give the engine as the bind source of rel (a folder beneath the session folder sess,
// whose host path is sessionDir).
func (s *stage) source(sess *layout.Dir, sessionDir, rel string) (string, error) {
	fd, err := bind.OpenFolder(sess.Fd(), rel)
	if err != nil {
		if errors.Is(err, bind.ErrNotFolder) {
			return "", fmt.Errorf("%s/%s is not a folder of the session (a symlink or a file): refusing to bind it", sessionDir, rel)
		}
		return "", fmt.Errorf("%s/%s: %w", sessionDir, rel, err)
	}
	defer unix.Close(fd)
	if os.Geteuid() != 0 {
		return filepath.Join(sessionDir, rel), nil
	}
	if s.dir == "" {
		if err := s.create(); err != nil {
			return "", err
		}
	}
	name := strconv.Itoa(len(s.mounts))
	target := filepath.Join(s.dir, name)
	if err := os.Mkdir(target, 0o700); err != nil {
		return "", err
	}
	if err := s.attach(fd, name); err != nil {
		_ = os.Remove(target)
		return "", fmt.Errorf("stage the bind of %s/%s: %w", sessionDir, rel, err)
	}
	s.mounts = append(s.mounts, target)
	return target, nil
}

// attach binds the folder open at src onto the staged folder name (package bind: nosuid, nodev).
func (s *stage) attach(src int, name string) error {
	dir, err := unix.Open(s.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	dst, err := bind.OpenPlace(dir, name)
	if err != nil {
		return err
	}
	defer unix.Close(dst)
	m, err := bind.Attach(src, dst, 0)
	if err != nil {
		return err
	}
	m.Close()
	return nil
}

func (s *stage) create() error {
	if err := os.MkdirAll(stageRoot, 0o700); err != nil {
		return err
	}
	sweepStale()
	dir, err := os.MkdirTemp(stageRoot, strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return err
	}
	s.dir = dir
	return nil
}

// release unmounts and removes what was staged. The container keeps its own binds.
func (s *stage) release() {
	for _, m := range s.mounts {
		_ = unix.Unmount(m, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
		_ = os.Remove(m)
	}
	s.mounts = nil
	if s.dir != "" {
		_ = os.Remove(s.dir)
		s.dir = ""
	}
}

// sweepStale releases the stages of runs that died before releasing them (their pid is gone).
func sweepStale() {
	ents, err := os.ReadDir(stageRoot)
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, _, ok := strings.Cut(e.Name(), "-")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil || n <= 0 || unix.Kill(n, 0) != unix.ESRCH {
			continue
		}
		dir := filepath.Join(stageRoot, e.Name())
		subs, _ := os.ReadDir(dir)
		for _, sub := range subs {
			_ = unix.Unmount(filepath.Join(dir, sub.Name()), unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
			_ = os.Remove(filepath.Join(dir, sub.Name()))
		}
		_ = os.Remove(dir)
	}
}
