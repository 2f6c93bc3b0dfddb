package mount

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// scratchPrefix names the serving process's scratch folders in the system's temporary folder.
const scratchPrefix = "sessionfs-mount-"

// makeScratch makes the confined daemon's private scratch folder (0700), named for this process, after removing
// those of this user's daemons that are gone: one killed left its folder, and a confined one empties its folder
// but cannot remove it (Landlock grants it nothing on the temporary folder itself). It returns the folder and
// what empties it.
func makeScratch() (string, func(), error) {
	tmp := os.TempDir()
	if old, err := filepath.Glob(filepath.Join(tmp, scratchPrefix+"*")); err == nil {
		for _, dir := range old {
			pid, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(dir), scratchPrefix), "-")
			var st syscall.Stat_t
			if n, err := strconv.Atoi(pid); err == nil && syscall.Kill(n, 0) == syscall.ESRCH &&
				syscall.Lstat(dir, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR && int(st.Uid) == os.Geteuid() {
				_ = os.RemoveAll(dir)
			}
		}
	}
	dir, err := os.MkdirTemp(tmp, fmt.Sprintf("%s%d-", scratchPrefix, os.Getpid()))
	if err != nil {
		return "", nil, err
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}
