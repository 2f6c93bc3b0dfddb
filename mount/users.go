package mount

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Users lists the processes that keep the mount at mnt busy (a working folder, a root or an open file beneath
// it), as "pid name", for the message that says what an unmount waits for. It reads /proc: no path beneath the
// mount is walked.
func Users(mnt string) []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := strconv.Itoa(os.Getpid())
	beneath := func(p string) bool { return p == mnt || strings.HasPrefix(p, mnt+"/") }
	var out []string
	for _, e := range ents {
		pid := e.Name()
		if _, err := strconv.Atoi(pid); err != nil || pid == self {
			continue
		}
		uses := false
		for _, l := range []string{"cwd", "root"} {
			if p, err := os.Readlink(filepath.Join("/proc", pid, l)); err == nil && beneath(p) {
				uses = true
			}
		}
		if !uses {
			fds, _ := os.ReadDir(filepath.Join("/proc", pid, "fd"))
			for _, fd := range fds {
				if p, err := os.Readlink(filepath.Join("/proc", pid, "fd", fd.Name())); err == nil && beneath(p) {
					uses = true
					break
				}
			}
		}
		if uses {
			comm, _ := os.ReadFile(filepath.Join("/proc", pid, "comm"))
			out = append(out, fmt.Sprintf("%s %s", pid, strings.TrimSpace(string(comm))))
		}
	}
	slices.Sort(out)
	return out
}
