package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/posixtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestShellToolsOnTheMount: ls, du, find, grep, tail -f, mkdir and rm -rf work on the mount as on any folder.
func TestShellToolsOnTheMount(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	s1 := m.session("s1")

	sh(t, s1, "mkdir -p workspace/src && echo 'needle in a haystack' > workspace/src/a.txt && head -c 100000 /dev/zero > workspace/big")
	assert.Contains(t, sh(t, m.mnt, "ls -la sessions/s1"), "workspace")
	assert.Contains(t, sh(t, m.mnt, "ls -la sessions/s1/.claude/projects"), "-session-workspace")
	du := sh(t, m.mnt, "du -sk sessions/s1")
	assert.Regexp(t, `^\d+\s`, du)
	assert.Contains(t, sh(t, m.mnt, "find sessions -name a.txt"), "sessions/s1/workspace/src/a.txt")
	assert.Contains(t, sh(t, m.mnt, "grep -r needle sessions/s1/workspace"), "a.txt:needle")
	assert.FileExists(t, filepath.Join(store, "sessions", "s1", "workspace", "src", "a.txt"), "writes land in the store")

	// Write, rename, link, symlink, chmod, truncate pass through.
	sh(t, s1, "cd workspace && mv src/a.txt src/b.txt && ln src/b.txt hard && ln -s src/b.txt soft && chmod 600 hard && truncate -s 3 soft")
	b, err := os.ReadFile(filepath.Join(store, "sessions", "s1", "workspace", "src", "b.txt"))
	require.NoError(t, err)
	assert.Equal(t, "nee", string(b))
	st, err := os.Stat(filepath.Join(store, "sessions", "s1", "workspace", "src", "b.txt"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	assert.Equal(t, "src/b.txt\n", sh(t, s1, "readlink workspace/soft"))

	// tail -f through one alias sees lines appended through another.
	aliasA := filepath.Join(s1, ".claude", "projects", "-home-u-a", "t.jsonl")
	aliasB := filepath.Join(s1, ".claude", "projects", "-session-workspace", "t.jsonl")
	require.NoError(t, os.WriteFile(aliasB, []byte(`{"n":0}`+"\n"), 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tail := exec.CommandContext(ctx, "tail", "-n", "+1", "-f", aliasA)
	pipe, err := tail.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, tail.Start())
	defer tail.Wait()
	lines := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	f, err := os.OpenFile(aliasB, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	for _, l := range []string{`{"n":1}`, `{"n":2}`} {
		_, err = f.WriteString(l + "\n")
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())
	var seen []string
	timeout := time.After(10 * time.Second)
	for len(seen) < 3 {
		select {
		case l := <-lines:
			seen = append(seen, l)
		case <-timeout:
			t.Fatalf("tail -f saw only %v", seen)
		}
	}
	assert.Equal(t, []string{`{"n":0}`, `{"n":1}`, `{"n":2}`}, seen)
	cancel()

	// mkdir makes a session with the convention; a bad id is refused; rm -rf sends a session to the trash.
	sh(t, m.mnt, "mkdir sessions/made-by-mkdir")
	for _, d := range []string{"app", "workspace", "mcps", ".claude/projects/-session-workspace"} {
		assert.DirExists(t, filepath.Join(store, "sessions", "made-by-mkdir", d))
	}
	assert.Contains(t, ok(t, store, "ls"), "made-by-mkdir")
	err = os.Mkdir(filepath.Join(m.mnt, "sessions", "..."), 0o755)
	assert.ErrorIs(t, err, syscall.EINVAL)
	err = os.Mkdir(filepath.Join(m.mnt, "sessions", "-x"), 0o755)
	assert.ErrorIs(t, err, syscall.EINVAL)

	sh(t, m.mnt, "rm -rf sessions/made-by-mkdir")
	assert.NoDirExists(t, filepath.Join(store, "sessions", "made-by-mkdir"))
	trash := trashedSessions(t, store)
	require.Len(t, trash, 1)
	assert.True(t, strings.HasPrefix(trash[0].Name(), "made-by-mkdir."))
	assert.NotContains(t, sh(t, m.mnt, "ls sessions"), "made-by-mkdir")
}

// notPOSIX lists posixtest cases that check something other than POSIX behaviour, with the reason.
var notPOSIX = map[string]string{
	// It takes a write lock and a read lock on two descriptors of one process and expects a conflict; POSIX
	// locks never conflict within a process. sessionfs leaves locks to the kernel (the mount does not ask the
	// daemon to hold them), so the kernel answers as POSIX says; TestPOSIXCases checks locks across processes.
	"FcntlFlockLocksFile": "locks within one process do not conflict under POSIX",
}

// TestPOSIX runs go-fuse's own conformance tests in the kinds of folder of a session on the mount: a workspace
// bound from the store, a workspace served through FUSE (--max-binds 0, as a normal user's mount serves it), and
// a transcript view of .claude, as root (where a view written through becomes a bind of the canonical folder, at
// some moment of the run) and through FUSE alone.
func TestPOSIX(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	for _, place := range []struct{ name, binds, rel string }{
		{"bound workspace", "1", "workspace"},
		{"FUSE workspace", "0", "workspace"},
		{"transcript view", "1", ".claude/projects/-home-user-proj"},
		{"FUSE transcript view", "0", ".claude/projects/-home-user-proj"},
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
				if _, skip := kernelsOwn[name]; skip && place.binds != "0" {
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
// server) does not have: a bound workspace, and a transcript view once it is bound (written through).
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

// Finding 10: the mount re-makes a missing canonical folder with the session's owner, files made in a setgid
// folder get its group, .claude/projects takes touch, and readdir and stat agree on inode numbers in alias views.
func TestOwnershipAndIdentity(t *testing.T) {
	need(t, os.Geteuid() == 0, "owners other than root need root")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	sess := filepath.Join(store, "sessions", "s1")
	require.NoError(t, filepath.WalkDir(sess, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 1000, 1000)
	}))
	require.NoError(t, os.RemoveAll(filepath.Join(sess, ".claude", "projects", "-session-workspace")))
	setgid := filepath.Join(sess, "workspace", "shared")
	require.NoError(t, os.Mkdir(setgid, 0o755))
	require.NoError(t, os.Chown(setgid, 1000, 4242))
	require.NoError(t, syscall.Chmod(setgid, 0o2775)) // os.Chmod takes os.ModeSetgid, not 0o2000
	m := mount(t, store)

	// A lookup re-makes the canonical folder, owned like the session.
	_, err := os.Stat(filepath.Join(m.session("s1"), ".claude", "projects", "-home-u-any"))
	require.NoError(t, err)
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(filepath.Join(sess, ".claude", "projects", "-session-workspace"), &st))
	assert.Equal(t, [2]uint32{1000, 1000}, [2]uint32{st.Uid, st.Gid}, "the canonical folder keeps the session's owner")

	require.NoError(t, os.WriteFile(filepath.Join(m.session("s1"), "workspace", "shared", "f"), nil, 0o644))
	require.NoError(t, syscall.Stat(filepath.Join(setgid, "f"), &st))
	assert.Equal(t, uint32(4242), st.Gid, "a file made in a setgid folder gets the folder's group")

	require.NoError(t, exec.Command("touch", filepath.Join(m.session("s1"), ".claude", "projects")).Run(), "touch .claude/projects")

	view := filepath.Join(m.session("s1"), ".claude", "projects", "-home-u-view")
	require.NoError(t, os.MkdirAll(filepath.Join(view, "sub"), 0o755))
	ents, err := os.ReadDir(view)
	require.NoError(t, err)
	for _, e := range ents {
		var est syscall.Stat_t
		require.NoError(t, syscall.Lstat(filepath.Join(view, e.Name()), &est))
		info, err := e.Info()
		require.NoError(t, err)
		assert.Equal(t, est.Ino, info.Sys().(*syscall.Stat_t).Ino, "%s: readdir and stat agree", e.Name())
	}
	// getdents' own inode numbers, as ls -i and find see them.
	out, err := exec.Command("sh", "-c", "ls -i1 "+view+" && stat -c '%i %n' "+view+"/sub").CombinedOutput()
	require.NoError(t, err, string(out))
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 2, string(out))
	assert.Equal(t, strings.Fields(lines[0])[0], strings.Fields(lines[1])[0], "readdir's inode number is stat's: %s", out)
}

// Two filesystems mounted inside a workspace never share a file's identity (st_dev, st_ino) through the mount:
// through FUSE (one st_dev) their inode numbers differ; through the binds each keeps its own filesystem.
func TestInodesKeepTheirFilesystem(t *testing.T) {
	need(t, os.Geteuid() == 0, "mounting tmpfs needs root")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ws := filepath.Join(store, "sessions", "s1", "workspace")
	for _, name := range []string{"a", "b"} {
		dir := filepath.Join(ws, name)
		require.NoError(t, os.Mkdir(dir, 0o755))
		require.NoError(t, exec.Command("mount", "-t", "tmpfs", "tmpfs", dir).Run())
		t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
		require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte(name), 0o644))
	}
	for _, binds := range []string{"0", "1"} {
		m := mount(t, store, "--max-binds", binds)
		if binds == "1" {
			waitBound(t, m, "s1")
		}
		var ids [][2]uint64
		for _, name := range []string{"a", "b"} {
			var st syscall.Stat_t
			p := filepath.Join(m.session("s1"), "workspace", name, "f")
			require.NoError(t, syscall.Stat(p, &st))
			ids = append(ids, [2]uint64{st.Dev, st.Ino})
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			assert.Equal(t, name, string(b), "each file shows its own content (--max-binds %s)", binds)
		}
		assert.NotEqual(t, ids[0], ids[1], "--max-binds %s", binds)
		m.stop(t)
	}
}

// outcome is an operation's result as a comparable string.
func outcome(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	if err != nil {
		return "error: " + err.Error()
	}
	return "ok"
}

// posixOps runs operations near PATH_MAX and creates with mode 0000 in dir (an empty folder) and returns each
// one's outcome, so the mount's can be compared with the native filesystem's.
func posixOps(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	note := func(what string, err error) { out = append(out, what+": "+outcome(err)) }

	// Walk down with relative names from a descriptor until the full path is just under PATH_MAX.
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	require.NoError(t, err)
	full := len(dir)
	// Folders of 200 bytes, then one that leaves about 100 bytes to PATH_MAX.
	const target = unix.PathMax - 1 - 1 - 100
	for full < target {
		n := min(200, target-full-1)
		comp := strings.Repeat("d", n)
		note(fmt.Sprintf("mkdirat %d", n), unix.Mkdirat(fd, comp, 0o755))
		sub, err := unix.Openat(fd, comp, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		require.NoError(t, err)
		unix.Close(fd)
		fd, full = sub, full+1+n
	}
	defer unix.Close(fd)
	// From here, names that bring the path to PATH_MAX-1 and past it.
	pad := unix.PathMax - 1 - full - 1
	for _, n := range []int{pad - 10, pad, pad + 1, pad + 30} {
		if n < 1 || n > 255 {
			continue
		}
		name := strings.Repeat("f", n)
		tag := fmt.Sprintf("len%+d", n-pad)
		f, err := unix.Openat(fd, name, unix.O_CREAT|unix.O_WRONLY|unix.O_EXCL, 0o644)
		note(tag+" create", err)
		if err == nil {
			unix.Close(f)
		}
		note(tag+" chmod", unix.Fchmodat(fd, name, 0o600, 0))
		note(tag+" chown", unix.Fchownat(fd, name, os.Getuid(), os.Getgid(), 0))
		note(tag+" truncate", truncateAt(fd, name))
		note(tag+" link", unix.Linkat(fd, name, fd, name+"l", 0))
		note(tag+" rename", unix.Renameat(fd, name, fd, name+"r"))
		note(tag+" unlink", unix.Unlinkat(fd, name+"r", 0))
		note(tag+" unlink link", unix.Unlinkat(fd, name+"l", 0))
		note(tag+" mkdir", unix.Mkdirat(fd, name, 0o755))
		note(tag+" rmdir", unix.Unlinkat(fd, name, unix.AT_REMOVEDIR))
		note(tag+" mkfifo", unix.Mkfifoat(fd, name, 0o644))
		note(tag+" unlink fifo", unix.Unlinkat(fd, name, 0))
		note(tag+" symlink", unix.Symlinkat("target", fd, name))
		note(tag+" unlink symlink", unix.Unlinkat(fd, name, 0))
	}
	// Creates with mode 0000, in every access mode.
	for i, flags := range []int{unix.O_RDONLY, unix.O_WRONLY, unix.O_RDWR} {
		name := fmt.Sprintf("zero%d", i)
		f, err := unix.Openat(fd, name, unix.O_CREAT|unix.O_EXCL|flags, 0)
		note(fmt.Sprintf("create 0000 flags %d", flags), err)
		if err == nil {
			unix.Close(f)
		}
		var st unix.Stat_t
		note("stat "+name, unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW))
		out = append(out, fmt.Sprintf("mode %s: %o", name, st.Mode&0o7777))
	}
	return out
}

func truncateAt(dirfd int, name string) error {
	f, err := unix.Openat(dirfd, name, unix.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(f)
	return unix.Ftruncate(f, 10)
}

// TestPOSIXMatchesNative: paths near PATH_MAX and mode-0000 creates give exactly the native filesystem's results
// through the mount. The mount's folder path is made as long as the native one, so both reach PATH_MAX at the
// same name.
func TestPOSIXMatchesNative(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	viaMount := filepath.Join(m.session("s1"), "workspace", "p")
	native := filepath.Join(store, "sessions", "s1", "workspace", "n")
	// Same length for both starting folders.
	if d := len(viaMount) - len(native); d > 0 {
		native += strings.Repeat("n", d)
	} else if d < 0 {
		viaMount += strings.Repeat("p", -d)
	}
	require.NoError(t, os.Mkdir(native, 0o755))
	require.NoError(t, os.Mkdir(viaMount, 0o755))
	want := posixOps(t, native)
	got := posixOps(t, viaMount)
	assert.Equal(t, want, got)
	t.Logf("%d operations, the same results as the native filesystem", len(want))
}
