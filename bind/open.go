package bind

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrNotFolder is a session's folder that is not one: a symlink, a file, a FIFO, or a mount someone laid there.
var ErrNotFolder = errors.New("not a folder of the session (a symlink, a file, or a mount): refusing to bind it")

// beneath: never above the start, no symlink, no magic link, no mount crossed.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// OpenFolder opens the folder rel beneath the folder open at dir (a session's folder in the store), reached with
// no symlink and no mount crossed, as an O_PATH descriptor. A name that is not such a folder is ErrNotFolder.
func OpenFolder(dir int, rel string) (int, error) {
	fd, err := openBeneath(dir, rel)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EXDEV) {
		return -1, fmt.Errorf("%s: %w", rel, ErrNotFolder)
	}
	return fd, err
}

// OpenPlace opens the folder rel beneath root, where a bind is to land, as OpenFolder does: something mounted
// there already is EXDEV, a symlink ELOOP, so the bind lands on this folder of root's filesystem and nowhere else.
func OpenPlace(root int, rel string) (int, error) { return openBeneath(root, rel) }

func openBeneath(dir int, rel string) (int, error) {
	rel = strings.Trim(rel, "/")
	if rel == "" {
		rel = "."
	}
	for {
		fd, err := unix.Openat2(dir, rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: beneath})
		if err == unix.EINTR || err == unix.EAGAIN {
			continue // EAGAIN: a rename raced the lookup; RESOLVE_BENEATH asks for a retry
		}
		return fd, err
	}
}
