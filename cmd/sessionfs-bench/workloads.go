package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// workload is one measured piece of work in a folder of a target. prepare runs untimed before each run.
type workload struct {
	name    string
	cold    bool // caches are dropped after prepare
	prepare func(dir string) error
	run     func(dir string) error
}

// newDir makes a new empty folder in dir for a creating workload's run. A run never creates where files were
// just deleted: on this machine's disk (ext4 without a journal) the creates that follow a mass deletion pay for
// it (the same folder, through the mount and plainly: 0.67-0.96 s for 10,000 creates right after another
// folder's 10,000 deletions, 0.19-0.31 s otherwise), so whichever place ran after another's clean-up paid for it.
// What the runs made stays in the bench's folder (a temporary one, unless -dir is given, is deleted at the end).
func newDir(dir string) (string, error) {
	newDirs++
	d := filepath.Join(dir, fmt.Sprintf("new-%d", newDirs))
	return d, os.Mkdir(d, 0o755)
}

var newDirs int

const block = 1 << 20

func (c config) workloads() []workload {
	data := func(dir string) string { return filepath.Join(dir, "data.bin") }
	ensureData := func(dir string) error { return ensureFile(data(dir), c.size) }
	small := func(dir string) string { return filepath.Join(dir, "small") }
	tree := func(dir string) string { return filepath.Join(dir, "tree") }
	transcript := func(dir string) string { return filepath.Join(dir, "t.jsonl") }
	var made string // the folder newDir made for the run about to start
	return []workload{
		{name: fmt.Sprintf("seq write %s (1 MiB blocks, fsync)", human(c.size)),
			prepare: func(dir string) error { return rmIfExists(filepath.Join(dir, "w.bin")) },
			run:     func(dir string) error { return writeFile(filepath.Join(dir, "w.bin"), c.size) }},
		{name: fmt.Sprintf("seq read %s cold", human(c.size)), cold: true, prepare: ensureData,
			run: func(dir string) error { return readFile(data(dir)) }},
		{name: fmt.Sprintf("seq read %s warm", human(c.size)),
			prepare: func(dir string) error {
				if err := ensureData(dir); err != nil {
					return err
				}
				return readFile(data(dir))
			},
			run: func(dir string) error { return readFile(data(dir)) }},
		{name: "4 KiB random reads x20000 (warm)", prepare: ensureData,
			run: func(dir string) error { return randomReads(data(dir), c.size, 20000) }},
		{name: fmt.Sprintf("create %d small files", c.files),
			prepare: func(dir string) (err error) { made, err = newDir(dir); return err },
			run:     func(string) error { return createFiles(made, c.files) }},
		{name: fmt.Sprintf("stat %d files", c.files),
			prepare: func(dir string) error { return ensureFiles(small(dir), c.files) },
			run:     func(dir string) error { return statFiles(small(dir), c.files) }},
		{name: fmt.Sprintf("write then stat each of %d files", c.files),
			prepare: func(dir string) (err error) { made, err = newDir(dir); return err },
			run:     func(string) error { return createStatFiles(made, c.files) }},
		{name: fmt.Sprintf("unlink %d files", c.files),
			prepare: func(dir string) error { return ensureFiles(small(dir), c.files) },
			run:     func(dir string) error { return unlinkFiles(small(dir), c.files) }},
		{name: fmt.Sprintf("ls -lR of %d files cold", c.files), cold: true,
			prepare: func(dir string) error { return ensureTree(tree(dir), c.files) },
			run:     func(dir string) error { _, err := lsWalk(tree(dir)); return err }},
		{name: fmt.Sprintf("ls -lR of %d files warm", c.files),
			prepare: func(dir string) error {
				if err := ensureTree(tree(dir), c.files); err != nil {
					return err
				}
				_, err := lsWalk(tree(dir))
				return err
			},
			run: func(dir string) error { _, err := lsWalk(tree(dir)); return err }},
		// The same from inside, as a shell or an agent whose working folder is the workspace runs it: GNU ls -lR
		// of a relative path. Each lstat by an absolute path walks the mount's folders on the way to the bind
		// (the kernel's FUSE checks of each: docs/performance.md); a relative one starts past them.
		{name: fmt.Sprintf("ls -lR of %d files warm, from inside (GNU ls)", c.files),
			prepare: func(dir string) error {
				if err := ensureTree(tree(dir), c.files); err != nil {
					return err
				}
				return lsInside(tree(dir))
			},
			run: lsInside},
		// The workload (38): small appends to a file at the top of a session's workspace, the folder the
		// daemon's watcher followed; each place writes its own file there (the store and the mount share the folder).
		{name: fmt.Sprintf("%d appends at the workspace's top (open O_APPEND, write, close)", c.topAppends),
			prepare: func(dir string) error { return rmIfExists(topFile(dir)) },
			run:     func(dir string) error { return appendLines(topFile(dir), c.topAppends) }},
		{name: fmt.Sprintf("%d JSONL appends (open, write, close)", c.appends),
			prepare: func(dir string) error { return rmIfExists(transcript(dir)) },
			run:     func(dir string) error { return appendLines(transcript(dir), c.appends) }},
	}
}

// lsInside runs GNU ls -lR in folder dir, of ".", its output to /dev/null (as exec.Cmd's nil Stdout is).
func lsInside(dir string) error {
	var stderr bytes.Buffer
	cmd := exec.Command("ls", "-lR", ".")
	cmd.Dir, cmd.Stderr = dir, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ls -lR in %s: %v: %.200s", dir, err, stderr.String())
	}
	return nil
}

// topFile is the file of the workload folder dir's place at the top of its workspace (dir's parent).
func topFile(dir string) string {
	return filepath.Join(filepath.Dir(dir), "appends-"+filepath.Base(dir)+".jsonl")
}

func fresh(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.MkdirAll(dir, 0o755)
}

func rmIfExists(p string) error {
	if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

func ensureFile(p string, size int64) error {
	if st, err := os.Stat(p); err == nil && st.Size() == size {
		return nil
	}
	return writeFile(p, size)
}

func writeFile(p string, size int64) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	buf := make([]byte, block)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	for n := int64(0); n < size; n += block {
		if _, err := f.Write(buf[:min(block, size-n)]); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func readFile(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, block)
	for {
		_, err := f.Read(buf)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func randomReads(p string, size int64, n int) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 4096)
	for i := 0; i < n; i++ {
		if _, err := f.ReadAt(buf, r.Int64N(size/4096)*4096); err != nil && err != io.EOF {
			return err
		}
	}
	return nil
}

func smallName(dir string, i int) string { return filepath.Join(dir, fmt.Sprintf("f%05d", i)) }

var payload = make([]byte, 100)

func createFiles(dir string, n int) error {
	for i := 0; i < n; i++ {
		fd, err := syscall.Open(smallName(dir, i), syscall.O_CREAT|syscall.O_EXCL|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o644)
		if err != nil {
			return err
		}
		if _, err := syscall.Write(fd, payload); err != nil {
			syscall.Close(fd)
			return err
		}
		if err := syscall.Close(fd); err != nil {
			return err
		}
	}
	return nil
}

// createStatFiles creates n files and stats each right after writing it (a build's or an editor's pattern: the
// write dropped the cached attributes).
func createStatFiles(dir string, n int) error {
	if err := createFiles(dir, n); err != nil {
		return err
	}
	var st syscall.Stat_t
	for i := 0; i < n; i++ {
		fd, err := syscall.Open(smallName(dir, i), syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		_, err = syscall.Write(fd, payload)
		syscall.Close(fd)
		if err != nil {
			return err
		}
		if err := syscall.Stat(smallName(dir, i), &st); err != nil {
			return err
		}
	}
	return nil
}

func ensureFiles(dir string, n int) error {
	if _, err := os.Stat(smallName(dir, n-1)); err == nil {
		return nil
	}
	if err := fresh(dir); err != nil {
		return err
	}
	return createFiles(dir, n)
}

func statFiles(dir string, n int) error {
	var st unix.Stat_t
	for i := 0; i < n; i++ {
		if err := unix.Lstat(smallName(dir, i), &st); err != nil {
			return err
		}
	}
	return nil
}

func unlinkFiles(dir string, n int) error {
	for i := 0; i < n; i++ {
		if err := syscall.Unlink(smallName(dir, i)); err != nil {
			return err
		}
	}
	return nil
}

// ensureTree makes files files in 100 folders.
func ensureTree(dir string, files int) error {
	if _, err := os.Stat(filepath.Join(dir, "d99")); err == nil {
		return nil
	}
	if err := fresh(dir); err != nil {
		return err
	}
	for d := 0; d < 100; d++ {
		sub := filepath.Join(dir, fmt.Sprintf("d%02d", d))
		if err := os.Mkdir(sub, 0o755); err != nil {
			return err
		}
		if err := createFiles(sub, files/100); err != nil {
			return err
		}
	}
	return nil
}

// lsWalk does what ls -lR does per entry: read the folder, lstat, and ask the two xattrs GNU ls asks, each until a
// device answers that it keeps none (coreutils' getfilecon_cache and file_has_acl_cache: not asked again there).
func lsWalk(root string) (int, error) {
	n := 0
	buf := make([]byte, 256)
	var noLabels, noACLs uint64
	noLabels, noACLs = ^uint64(0), ^uint64(0)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		if st.Dev != noLabels {
			if _, err := unix.Lgetxattr(p, "security.selinux", buf); unsupported(err) {
				noLabels = st.Dev
			}
		}
		if st.Dev != noACLs {
			if _, err := unix.Getxattr(p, "system.posix_acl_access", nil); unsupported(err) {
				noACLs = st.Dev
			}
		}
		n++
		return nil
	})
	return n, err
}

// unsupported is coreutils' errno_unsupported: the file system keeps no such attribute.
func unsupported(err error) bool {
	return err == unix.EINVAL || err == unix.ENOTSUP || err == unix.EOPNOTSUPP
}

// duWalk sums the blocks of everything under the given session folders, as du does.
func duWalk(dirs []string) (int64, error) {
	var total int64
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				return err
			}
			total += st.Blocks * 512
			return nil
		})
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

var line = []byte(`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"a line of about one hundred bytes"}]}}` + "\n")

func appendLines(p string, n int) error {
	for i := 0; i < n; i++ {
		fd, err := syscall.Open(p, syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CREAT|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			return err
		}
		if _, err := syscall.Write(fd, line); err != nil {
			syscall.Close(fd)
			return err
		}
		if err := syscall.Close(fd); err != nil {
			return err
		}
	}
	return nil
}

func timed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

func human(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d B", n)
}
