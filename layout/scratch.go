package layout

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// scratchName is the store's folder of scratch space for the processes serving it: a confined mount daemon may
// write nowhere but the store, and reading a session's opencode database means copying it first (agents/opencode).
// Sessions cannot reach it: it is outside sessions/.
const scratchName = "tmp"

// MakeScratch makes a private folder (0700) of scratch space in the store for this process, named for the host
// and the process, and returns it with what removes it. Folders this host's processes left when they died are
// removed first.
func (s *Store) MakeScratch() (dir string, remove func(), err error) {
	root := filepath.Join(s.Root, scratchName)
	if err := os.Mkdir(root, 0o700); err != nil && !os.IsExist(err) {
		return "", nil, err
	}
	host, _ := os.Hostname()
	prefix := "mount-" + strings.ReplaceAll(host, "/", "_") + "-"
	if ents, err := os.ReadDir(root); err == nil {
		for _, e := range ents {
			pid, err := strconv.Atoi(strings.TrimPrefix(e.Name(), prefix))
			if err != nil || !strings.HasPrefix(e.Name(), prefix) || pid == os.Getpid() {
				continue
			}
			if syscall.Kill(pid, 0) == syscall.ESRCH {
				_ = os.RemoveAll(filepath.Join(root, e.Name()))
			}
		}
	}
	dir = filepath.Join(root, fmt.Sprintf("%s%d", prefix, os.Getpid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return "", nil, err
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}
