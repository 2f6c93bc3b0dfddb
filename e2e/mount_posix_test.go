package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/posixtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestCrashRecovery: kill -9 of the daemon while writers append through the mount. Every line fsync'd before the
// kill is in the store; the next mount on the same mountpoint clears the dead mount by itself, in under a second.
func TestCrashRecovery(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	// The workspace through FUSE (a bound one is the store's own folder, which no daemon crash touches).
	m := mount(t, store, "--max-binds", "0")
	const writers = 4
	acked := make([]atomic.Int64, writers) // lines each writer saw fsync'd
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		cmd := appender(t, filepath.Join(m.session("s1"), "workspace", "log.jsonl"), fmt.Sprint(w), 0, true)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				n, _ := strconv.Atoi(sc.Text())
				acked[w].Store(int64(n) + 1)
			}
			_ = cmd.Wait()
		}()
	}
	// Killed mid-stream: once every writer has some lines down (a loaded machine starts them slowly).
	eventually(t, 30*time.Second, func() bool {
		for w := range acked {
			if acked[w].Load() < 10 {
				return false
			}
		}
		return true
	}, "the writers did not get going")
	m.kill(t)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("writers hang on the dead mount instead of getting an error")
	}

	// Every acknowledged line is in the store, whole.
	data, err := os.ReadFile(filepath.Join(store, "sessions", "s1", "workspace", "log.jsonl"))
	require.NoError(t, err)
	got := make([]int, writers)
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var e struct {
			Writer string
			N      int
		}
		require.NoError(t, json.Unmarshal(line, &e), "a torn line: %q", line)
		w, _ := strconv.Atoi(e.Writer)
		require.Equal(t, got[w], e.N, "writer %d's lines are in order, none missing", w)
		got[w]++
	}
	ackedN := make([]int, writers)
	for w := range acked {
		ackedN[w] = int(acked[w].Load())
		assert.GreaterOrEqual(t, got[w], ackedN[w], "writer %d: every fsync'd line survived", w)
	}

	start := time.Now()
	m.start(t)
	took := time.Since(start)
	t.Logf("remounted over the dead mount in %v; lines acknowledged %v, stored %v", took, ackedN, got)
	assert.Less(t, took, time.Second)
	assert.FileExists(t, filepath.Join(m.session("s1"), "workspace", "log.jsonl"))
}

// TestConcurrentAppendsThroughAliases: 64 processes append 10,000 lines each to one transcript through 64
// different alias views; the file ends with exactly 640,000 whole lines.
func TestConcurrentAppendsThroughAliases(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	const writers, lines = 64, 10000
	var cmds []*exec.Cmd
	for w := 0; w < writers; w++ {
		p := filepath.Join(m.session("s1"), ".claude", "projects", fmt.Sprintf("-cwd-%d", w), "t.jsonl")
		cmd := appender(t, p, fmt.Sprint(w), lines, false)
		require.NoError(t, cmd.Start())
		cmds = append(cmds, cmd)
	}
	for _, c := range cmds {
		require.NoError(t, c.Wait())
	}
	f, err := os.Open(filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace", "t.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	count := make([]int, writers)
	total := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e struct {
			Writer string
			N      int
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e), "line %d is not whole: %q", total, sc.Text())
		w, _ := strconv.Atoi(e.Writer)
		require.Equal(t, count[w], e.N, "writer %d's lines in order", w)
		count[w]++
		total++
	}
	require.NoError(t, sc.Err())
	assert.Equal(t, writers*lines, total)
}

// TestParallelSessionsCreateRemove: sessions made and removed in parallel with mkdir / rm -rf through the mount
// and with the CLI leave a consistent store.
func TestParallelSessionsCreateRemove(t *testing.T) {
	store := t.TempDir()
	m := mount(t, store)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				dir := filepath.Join(m.mnt, "sessions", fmt.Sprintf("mk-%d-%d", g, i))
				if err := os.Mkdir(dir, 0o755); err != nil {
					errs <- err
					return
				}
				if err := os.WriteFile(filepath.Join(dir, "workspace", "f"), []byte("x"), 0o644); err != nil {
					errs <- err
					return
				}
				if err := os.RemoveAll(dir); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				id := fmt.Sprintf("cli-%d-%d", g, i)
				if r := cli(t, store, "new", id); r.code != 0 {
					errs <- fmt.Errorf("new %s: %s", id, r.stderr)
					return
				}
				if r := cli(t, store, "rm", id); r.code != 0 {
					errs <- fmt.Errorf("rm %s: %s", id, r.stderr)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	ents, err := os.ReadDir(filepath.Join(m.mnt, "sessions"))
	require.NoError(t, err)
	assert.Empty(t, ents, "every session was removed")
	assert.Len(t, trashedSessions(t, store), 8*10+8*5, "every removed session waits in the trash")
	assert.Equal(t, "ID  CREATED  LAST ACTIVE  SIZE  CONVERSATIONS  LABELS\n", ok(t, store, "ls"))
}

// notPOSIX lists posixtest cases that check something other than POSIX behaviour, with the reason.
var notPOSIX = map[string]string{
	// It takes a write lock and a read lock on two descriptors of one process and expects a conflict; POSIX
	// locks never conflict within a process. sessionfs leaves locks to the kernel (the mount does not ask the
	// daemon to hold them), so the kernel answers as POSIX says; TestPOSIXCases checks locks across processes.
	"FcntlFlockLocksFile": "locks within one process do not conflict under POSIX",
}

// TestPOSIX runs go-fuse's own conformance tests in the three kinds of folder of a session on the mount: a
// workspace bound from the store, a workspace served through FUSE (--max-binds 0, as a normal user's mount
// serves it), and a transcript view of .claude.
func TestPOSIX(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	for _, place := range []struct{ name, binds, rel string }{
		{"bound workspace", "1", "workspace"},
		{"FUSE workspace", "0", "workspace"},
		{"transcript view", "1", ".claude/projects/-home-user-proj"},
	} {
		t.Run(place.name, func(t *testing.T) {
			m := mount(t, store, "--max-binds", place.binds)
			if place.binds != "0" {
				waitBound(t, m, "s1")
			}
			for name, fn := range posixtest.All {
				if _, skip := notPOSIX[name]; skip {
					continue
				}
				if _, skip := kernelsOwn[name]; skip && place.rel == "workspace" && place.binds != "0" {
					continue
				}
				if _, skip := viewsOwn[name]; skip && place.rel != "workspace" {
					continue
				}
				t.Run(name, func(t *testing.T) {
					dir := filepath.Join(m.session("s1"), place.rel, strings.ReplaceAll(place.name, " ", "-")+"-"+name)
					require.NoError(t, os.Mkdir(dir, 0o755))
					fn(t, dir)
				})
			}
			m.stop(t)
		})
	}
}

// viewsOwn lists posixtest cases whose removals a transcript folder keeps by design (README, No lost transcript).
var viewsOwn = map[string]string{
	// A file removed in a folder of a transcript folder (a conversation's <uuid>/ folder) moves to the transcript
	// trash: an open descriptor of it still has its one link.
	"FstatDeleted": "a removed transcript file moves to the transcript trash, keeping its link",
}

// kernelsOwn lists posixtest cases about a FUSE server that a bound folder (the kernel's own filesystem, no
// server) does not have.
var kernelsOwn = map[string]string{
	// It swaps a folder for a symlink to /etc while another thread opens a file in it, and fails if the open
	// reaches /etc: a FUSE server must not follow the link. On a local filesystem the kernel resolves the path
	// itself and follows the link, as it does on the store.
	"OpenSymlinkRace": "the kernel follows symlinks on its own filesystems",
}

// TestPOSIXCases: our own cases on top of posixtest.
func TestPOSIXCases(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	// Served by FUSE, not a bind of the store's folder (which is the disk's own filesystem, and which would
	// otherwise appear over the workspace at some moment of the test: a lock taken before it and one taken after
	// are on two different files).
	m := mount(t, store, "--max-binds", "0")
	ws := filepath.Join(m.session("s1"), "workspace")
	p := func(name string) string { return filepath.Join(ws, name) }

	t.Run("rename over an existing file", func(t *testing.T) {
		require.NoError(t, os.WriteFile(p("a"), []byte("new"), 0o644))
		require.NoError(t, os.WriteFile(p("b"), []byte("old"), 0o644))
		require.NoError(t, os.Rename(p("a"), p("b")))
		b, err := os.ReadFile(p("b"))
		require.NoError(t, err)
		assert.Equal(t, "new", string(b))
		assert.NoFileExists(t, p("a"))
	})
	t.Run("hard links share data and count links", func(t *testing.T) {
		require.NoError(t, os.WriteFile(p("h1"), []byte("1"), 0o644))
		require.NoError(t, os.Link(p("h1"), p("h2")))
		require.NoError(t, os.WriteFile(p("h2"), []byte("2"), 0o644))
		b, _ := os.ReadFile(p("h1"))
		assert.Equal(t, "2", string(b))
		var st syscall.Stat_t
		require.NoError(t, syscall.Stat(p("h1"), &st))
		assert.Equal(t, uint64(2), st.Nlink)
	})
	t.Run("chmod and chown", func(t *testing.T) {
		require.NoError(t, os.WriteFile(p("c"), nil, 0o644))
		require.NoError(t, os.Chmod(p("c"), 0o751))
		fi, err := os.Stat(p("c"))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o751), fi.Mode().Perm())
		if os.Geteuid() == 0 {
			require.NoError(t, os.Chown(p("c"), 1234, 5678))
			var st syscall.Stat_t
			require.NoError(t, syscall.Stat(filepath.Join(store, "sessions", "s1", "workspace", "c"), &st))
			assert.Equal(t, [2]uint32{1234, 5678}, [2]uint32{st.Uid, st.Gid})
		}
	})
	t.Run("locks conflict across processes", func(t *testing.T) {
		require.NoError(t, os.WriteFile(p("lock"), nil, 0o644))
		holder := exec.Command("flock", p("lock"), "sleep", "3")
		require.NoError(t, holder.Start())
		defer holder.Wait()
		eventually(t, 2*time.Second, func() bool {
			return exec.Command("flock", "-n", p("lock"), "true").Run() != nil
		}, "a second process took a lock another holds")
		require.NoError(t, holder.Process.Kill())
	})
	t.Run("O_EXCL", func(t *testing.T) {
		f, err := os.OpenFile(p("x"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		require.NoError(t, err)
		f.Close()
		_, err = os.OpenFile(p("x"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		assert.ErrorIs(t, err, os.ErrExist)
	})
	t.Run("sparse file past 4 GiB", func(t *testing.T) {
		f, err := os.Create(p("sparse"))
		require.NoError(t, err)
		defer f.Close()
		off := int64(5 << 30)
		_, err = f.WriteAt([]byte("end"), off)
		require.NoError(t, err)
		fi, err := f.Stat()
		require.NoError(t, err)
		assert.Equal(t, off+3, fi.Size())
		buf := make([]byte, 3)
		_, err = f.ReadAt(buf, off)
		require.NoError(t, err)
		assert.Equal(t, "end", string(buf))
		var st syscall.Stat_t
		require.NoError(t, syscall.Stat(p("sparse"), &st))
		assert.Less(t, st.Blocks*512, int64(1<<20), "the hole takes no space")
	})
	t.Run("mmap writes reach the store", func(t *testing.T) {
		require.NoError(t, os.WriteFile(p("mm"), make([]byte, 4096), 0o644))
		f, err := os.OpenFile(p("mm"), os.O_RDWR, 0)
		require.NoError(t, err)
		mem, err := syscall.Mmap(int(f.Fd()), 0, 4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
		require.NoError(t, err)
		copy(mem, "mapped")
		require.NoError(t, unix.Msync(mem, unix.MS_SYNC))
		require.NoError(t, syscall.Munmap(mem))
		f.Close()
		b, err := os.ReadFile(filepath.Join(store, "sessions", "s1", "workspace", "mm"))
		require.NoError(t, err)
		assert.Equal(t, "mapped", string(b[:6]))
	})
	t.Run("modes survive the umask", func(t *testing.T) {
		old := syscall.Umask(0o027)
		defer syscall.Umask(old)
		require.NoError(t, os.WriteFile(p("u"), nil, 0o666))
		require.NoError(t, os.Mkdir(p("ud"), 0o777))
		fi, _ := os.Stat(p("u"))
		assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
		fi, _ = os.Stat(p("ud"))
		assert.Equal(t, os.FileMode(0o750), fi.Mode().Perm())
		syscall.Umask(0)
		require.NoError(t, os.WriteFile(p("u0"), nil, 0o666))
		fi, _ = os.Stat(p("u0"))
		assert.Equal(t, os.FileMode(0o666), fi.Mode().Perm(), "the daemon's umask does not mask again")
	})
	t.Run("255-byte names and deep paths", func(t *testing.T) {
		long := strings.Repeat("n", 255)
		require.NoError(t, os.WriteFile(p(long), []byte("x"), 0o644))
		_, err := os.Stat(p(long))
		require.NoError(t, err)
		assert.Error(t, os.WriteFile(p(long+"x"), nil, 0o644), "256 bytes is too long")
		deep := ws
		for i := 0; i < 40; i++ {
			deep = filepath.Join(deep, fmt.Sprintf("level%02d-%s", i, strings.Repeat("d", 50)))
		}
		require.NoError(t, os.MkdirAll(deep, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(deep, "leaf"), []byte("deep"), 0o644))
		b, err := os.ReadFile(filepath.Join(deep, "leaf"))
		require.NoError(t, err)
		assert.Equal(t, "deep", string(b))
	})
}
