package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// stressReport is what the stress helper prints when it ends.
type stressReport struct {
	Ops     int64            `json:"ops"`
	Errnos  map[string]int64 `json:"errnos"`
	Leaks   []string         `json:"leaks"` // every sighting of the secret marker: must stay empty
	Workers int              `json:"workers"`
}

// helperStress is the attacker inside a session, run as an unprivileged uid through the mount: for
// HELPER_SECONDS it races renames, symlink swaps and rmdir across alias views against reads, writes, creates and
// listings, looking for the marker that only the host's secret folder (and another session) holds.
func helperStress() int {
	root, marker := os.Getenv("HELPER_SESSION"), os.Getenv("HELPER_MARKER")
	targets := strings.Split(os.Getenv("HELPER_TARGETS"), ":")
	secs, _ := strconv.Atoi(os.Getenv("HELPER_SECONDS"))
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	projects, ws := filepath.Join(root, ".claude", "projects"), filepath.Join(root, "workspace")

	var (
		ops   atomic.Int64
		mu    sync.Mutex
		errs  = map[string]int64{}
		leaks []string
	)
	note := func(err error) {
		ops.Add(1)
		var errno syscall.Errno
		if errors.As(err, &errno) {
			mu.Lock()
			errs[errno.Error()]++
			mu.Unlock()
		}
	}
	check := func(where string, b []byte) {
		if bytes.Contains(b, []byte(marker)) {
			mu.Lock()
			leaks = append(leaks, where)
			mu.Unlock()
		}
	}
	var wg sync.WaitGroup
	run := func(f func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				f(i)
			}
		}()
	}
	// Swappers: a folder seen through one view becomes a symlink out of the session, or goes away.
	for w := 0; w < 3; w++ {
		w := w
		run(func(i int) {
			d := filepath.Join(projects, fmt.Sprintf("-S%d", w), "d")
			note(os.Mkdir(d, 0o777))
			note(os.Rename(d, d+".old"))
			note(os.Symlink(targets[i%len(targets)], d))
			time.Sleep(time.Duration(i%3) * 100 * time.Microsecond)
			note(os.Remove(d))
			note(os.Rename(d+".old", d))
			if i%5 == 0 {
				note(os.RemoveAll(d))
			}
		})
		run(func(i int) {
			x := filepath.Join(ws, fmt.Sprintf("x%d", w))
			note(os.Mkdir(x, 0o777))
			note(os.Rename(x, x+".old"))
			note(os.Symlink(targets[i%len(targets)], x))
			note(os.Remove(x))
			note(os.Rename(x+".old", x))
		})
	}
	// Users: each holds a folder of another view open, as a shell's cwd, and works in it and by path.
	for w := 0; w < 6; w++ {
		w := w
		run(func(i int) {
			var dir string
			if w%2 == 0 {
				dir = filepath.Join(projects, fmt.Sprintf("-R%d", w), "d") // the same folder as -S*/d
			} else {
				dir = filepath.Join(ws, fmt.Sprintf("x%d", w%3))
			}
			fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
			note(err)
			if err != nil {
				return
			}
			defer unix.Close(fd)
			for k := 0; k < 8; k++ {
				stressRead(fd, "secret", note, check)
				stressRead(fd, "s2file", note, check)
				f, err := unix.Openat(fd, fmt.Sprintf("planted-%d", w), unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, 0o644)
				note(err)
				if err == nil {
					unix.Write(f, []byte("planted"))
					unix.Close(f)
				}
				note(unix.Mkdirat(fd, fmt.Sprintf("pdir-%d", w), 0o755))
				note(unix.Unlinkat(fd, fmt.Sprintf("pdir-%d", w), unix.AT_REMOVEDIR))
				ents, err := os.ReadDir(fmt.Sprintf("/proc/self/fd/%d", fd))
				note(err)
				for _, e := range ents {
					check("listing of "+dir, []byte(e.Name()))
				}
			}
			b, err := os.ReadFile(filepath.Join(dir, "secret"))
			note(err)
			check("read by path "+dir, b)
		})
	}
	wg.Wait()
	out, _ := json.Marshal(stressReport{Ops: ops.Load(), Errnos: errs, Leaks: leaks, Workers: 12})
	fmt.Println(string(out))
	return 0
}

func stressRead(dirfd int, name string, note func(error), check func(string, []byte)) {
	f, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	note(err)
	if err != nil {
		return
	}
	defer unix.Close(f)
	buf := make([]byte, 256)
	n, err := unix.Read(f, buf)
	note(err)
	if n > 0 {
		check("read of "+name, buf[:n])
	}
}
