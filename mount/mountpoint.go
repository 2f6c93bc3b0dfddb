package mount

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/moby/sys/mountinfo"

	"github.com/sessionfs/sessionfs/layout"
)

// The checks made before mounting: FUSE is there, the places make sense, the mountpoint is an empty folder (a
// stale mount of a crashed daemon cleared first).

// CheckFUSE says what is missing to mount FUSE here: /dev/fuse, the right to open it, or (a normal user)
// fusermount3.
func CheckFUSE() error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New("FUSE is not available: /dev/fuse is missing (load the fuse module; in a container, pass --device /dev/fuse)")
	case errors.Is(err, os.ErrPermission):
		return errors.New("no permission to open /dev/fuse (add yourself to the fuse group, or run as root)")
	case err != nil:
		return fmt.Errorf("open /dev/fuse: %w", err)
	}
	f.Close()
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			return errors.New("mounting as a normal user needs fusermount3 (apt-get install fuse3), or run as root")
		}
	}
	return nil
}

// checkPlaces refuses a mountpoint inside the store (the daemon would serve its own mount back to itself,
// without end) or a store inside the mountpoint, and a store that is already mounted elsewhere (two daemons
// would race each other's caches).
func checkPlaces(store *layout.Store, mnt string) error {
	real := func(p string) string {
		// The mountpoint may not exist yet: resolve its nearest existing parent.
		for dir, rest := p, ""; ; dir, rest = filepath.Dir(dir), filepath.Join(filepath.Base(dir), rest) {
			if r, err := filepath.EvalSymlinks(dir); err == nil {
				return filepath.Join(r, rest)
			}
			if dir == "/" || dir == "." {
				return p
			}
		}
	}
	root, m := real(store.Root), real(mnt)
	within := func(a, b string) bool { return a == b || strings.HasPrefix(a, strings.TrimSuffix(b, "/")+"/") }
	switch {
	case within(m, root):
		return fmt.Errorf("mountpoint %s is inside the store %s: pick a folder outside it", mnt, store.Root)
	case within(root, m):
		return fmt.Errorf("the store %s is inside the mountpoint %s: pick a folder outside it", store.Root, mnt)
	}
	if other, ok := Find(store.Root); ok && other.Mountpoint != mnt {
		if err := probe(other.Mountpoint); !isStale(err) {
			return fmt.Errorf("the store %s is already mounted at %s (sessionfs unmount %s first)", store.Root, other.Mountpoint, other.Mountpoint)
		}
	}
	return nil
}

// prepareMountpoint makes sure mnt is a folder we can mount on, clearing a stale mount of a crashed daemon.
func prepareMountpoint(mnt string) error {
	if isMountpoint(mnt) {
		// A daemon that died leaves "transport endpoint is not connected", or a hung connection.
		if err := probe(mnt); isStale(err) {
			if err := forceUnmount(mnt, err); err != nil {
				return fmt.Errorf("%s holds a stale mount of a crashed daemon and it could not be cleared: %w", mnt, err)
			}
		}
	}
	st, err := os.Stat(mnt)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(mnt, 0o755); err != nil {
			return fmt.Errorf("create mountpoint %s: %w", mnt, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("mountpoint %s: %w", mnt, err)
	case !st.IsDir():
		return fmt.Errorf("mountpoint %s is not a folder", mnt)
	}
	if isMountpoint(mnt) {
		return fmt.Errorf("%s is already mounted (sessionfs unmount %s)", mnt, mnt)
	}
	// Mounting over a folder hides what it holds: refuse, rather than make files vanish without a word. Folders
	// that hold nothing but folders hide nothing (a container engine that did not see the mount made them).
	if !onlyFolders(mnt, 0) {
		return fmt.Errorf("mountpoint %s is not empty (mounting would hide what it holds): empty it or pick another folder", mnt)
	}
	return nil
}

// isMountpoint reports whether something is mounted at mnt. It reads the mount table rather than stat mnt,
// which would hang on a hung mount.
func isMountpoint(mnt string) bool {
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(mnt))
	return err == nil && len(mounts) > 0
}

// onlyFolders reports whether dir holds nothing but folders that hold nothing but folders (a bounded walk, no
// symlink followed).
func onlyFolders(dir string, depth int) bool {
	ents, err := os.ReadDir(dir)
	if err != nil || depth > 16 || len(ents) > 1024 {
		return err == nil && len(ents) == 0
	}
	for _, e := range ents {
		if !e.IsDir() || !onlyFolders(filepath.Join(dir, e.Name()), depth+1) {
			return false
		}
	}
	return true
}

// mountError says what a refused mount needs.
func mountError(mnt string, err error) error {
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
		return fmt.Errorf("mount %s: permission denied (run as root, or install fuse3 and allow user mounts; --allow-other needs user_allow_other in /etc/fuse.conf)", mnt)
	}
	return fmt.Errorf("mount %s: %w", mnt, err)
}
