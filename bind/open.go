package bind

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
)

// ErrNotFolder is a session's folder that is not one: a symlink, a file, a FIFO, or a mount someone laid there.
var ErrNotFolder = errors.New("not a folder of the session (a symlink, a file, or a mount): refusing to bind it")

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

// openBeneath opens the folder rel beneath dir with no symlink, no magic link and no mount crossed (layout's one
// resolver).
func openBeneath(dir int, rel string) (int, error) {
	return layout.OpenBeneathNoMounts(dir, rel, unix.O_PATH|unix.O_DIRECTORY)
}
