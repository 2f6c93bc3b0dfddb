package e2e

import (
	"crypto/sha256"
	"encoding/hex"
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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Finding 8: a file appended behind the mount while a writer holds it open shows its new size through the mount
// at once, not after the attribute timeout.
func TestSizeFreshWhileOpenForWriting(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	viaMount := filepath.Join(m.session("s1"), "workspace", "log")
	f, err := os.OpenFile(viaMount, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteString("mount\n")
	require.NoError(t, err)
	fi, err := os.Stat(viaMount)
	require.NoError(t, err)
	require.Equal(t, int64(6), fi.Size())

	inStore, err := os.OpenFile(filepath.Join(store, "sessions", "s1", "workspace", "log"), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = inStore.WriteString("behind the mount\n")
	require.NoError(t, err)
	require.NoError(t, inStore.Close())
	within100ms(t, "the size of a file open for writing", func() bool {
		fi, err := os.Stat(viaMount)
		return err == nil && fi.Size() == 6+17
	})
}

// Finding 9: on a full store, removing a transcript through the mount still works (it waits in the trash), and a
// session that cannot be made leaves nothing behind, so a retry after freeing space works.
func TestFullStoreThroughMount(t *testing.T) {
	need(t, os.Geteuid() == 0, "a small tmpfs store needs root")
	store := t.TempDir()
	require.NoError(t, exec.Command("mount", "-t", "tmpfs", "-o", "size=1m,nr_inodes=400", "tmpfs", store).Run())
	t.Cleanup(func() { _ = exec.Command("umount", "-l", store).Run() })
	ok(t, store, "new", "s1")
	const uuid = "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01"
	transcript := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace", uuid+".jsonl")
	require.NoError(t, os.WriteFile(transcript, []byte("{\"type\":\"user\"}\n"), 0o600))
	m := mount(t, store)

	// Fill every inode and block.
	filler := filepath.Join(store, "filler")
	require.NoError(t, os.Mkdir(filler, 0o755))
	for i := 0; ; i++ {
		if err := os.WriteFile(filepath.Join(filler, fmt.Sprint(i)), make([]byte, 64<<10), 0o644); err != nil {
			break
		}
	}
	for i := 0; ; i++ {
		if os.Mkdir(filepath.Join(filler, fmt.Sprint("d", i)), 0o755) != nil {
			break
		}
	}

	require.NoError(t, os.Remove(filepath.Join(m.session("s1"), ".claude", "projects", "-home-u-p", uuid+".jsonl")),
		"a transcript is removed on a full disk")
	assert.NoFileExists(t, transcript)
	assert.Contains(t, ok(t, store, "trash", "ls", "s1"), uuid, "and waits in the trash")

	err := os.Mkdir(filepath.Join(m.mnt, "sessions", "late"), 0o755)
	require.Error(t, err)
	assert.True(t, errors.Is(err, syscall.ENOSPC), "%v", err)
	assert.NoDirExists(t, filepath.Join(store, "sessions", "late"), "no half-made session")
	require.NoError(t, os.RemoveAll(filler))
	require.NoError(t, os.Mkdir(filepath.Join(m.mnt, "sessions", "late"), 0o755), "a retry after freeing space works")
	assert.FileExists(t, filepath.Join(store, "sessions", "late", "session.json"))
}

// treeDigest records every entry beneath dir: type, mode, owner, size, mtime and content.
func treeDigest(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		v := fmt.Sprintf("%o %d:%d %d %d", st.Mode, st.Uid, st.Gid, st.Size, st.Mtim.Nano())
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			v += " " + hex.EncodeToString(sum[:8])
		}
		if rel != "." && d.IsDir() {
			v = fmt.Sprintf("%o %d:%d %d", st.Mode, st.Uid, st.Gid, st.Mtim.Nano()) // folder sizes vary by fs
		}
		out[rel] = v
		return nil
	}))
	return out
}

// Finding 10: a read-only mount changes nothing in the store, even with history to fold, a canonical folder
// missing and aliases never seen before.
func TestReadOnlyLeavesStoreIdentical(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ok(t, store, "new", "s2")
	projects := filepath.Join(store, "sessions", "s1", ".claude", "projects")
	require.NoError(t, os.MkdirAll(filepath.Join(projects, "-home-u-unfolded"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(projects, "-home-u-unfolded", "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01.jsonl"), []byte("{}\n"), 0o600))
	require.NoError(t, os.RemoveAll(filepath.Join(store, "sessions", "s2", ".claude", "projects", "-session-workspace")))
	before := treeDigest(t, store)

	m := mount(t, store, "--read-only")
	for _, p := range []string{
		filepath.Join(m.session("s1"), ".claude", "projects"),
		filepath.Join(m.session("s1"), ".claude", "projects", "-home-u-new"),
		filepath.Join(m.session("s2"), ".claude", "projects"),
		filepath.Join(m.session("s2"), ".claude", "projects", "-x"),
		filepath.Join(m.mnt, "by-claude-id"),
	} {
		_, _ = os.ReadDir(p)
	}
	_, _ = os.ReadFile(filepath.Join(m.session("s1"), "session.json"))
	m.stop(t)
	assert.Equal(t, before, treeDigest(t, store), "the store is byte-identical after a read-only mount")
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

// TestMountWithoutFusermount: as root, with no fusermount or fusermount3 anywhere (a machine without fuse3), the
// mount comes up by mounting directly.
func TestMountWithoutFusermount(t *testing.T) {
	need(t, os.Geteuid() == 0, "mounting directly needs root")
	needFUSE(t)
	_, err := exec.LookPath("unshare")
	need(t, err == nil, "unshare (util-linux) is missing")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	mnt := filepath.Join(t.TempDir(), "mnt")
	// In a private mount namespace, every fusermount binary is hidden behind /dev/null, then sessionfs mounts,
	// lists and unmounts.
	script := `for b in /bin/fusermount /bin/fusermount3 /usr/bin/fusermount /usr/bin/fusermount3 /usr/local/bin/fusermount /usr/local/bin/fusermount3; do
  [ -e "$b" ] && mount --bind /dev/null "$b"
done
if command -v fusermount >/dev/null 2>&1 && fusermount -V >/dev/null 2>&1; then echo "fusermount still usable"; exit 98; fi
if command -v fusermount3 >/dev/null 2>&1 && fusermount3 -V >/dev/null 2>&1; then echo "fusermount3 still usable"; exit 98; fi
"$0" mount "$1" & pid=$!
i=0; while ! [ -d "$1/sessions/s1/workspace" ]; do i=$((i+1)); [ $i -gt 200 ] && { echo "not mounted"; kill $pid; exit 97; }; sleep 0.05; done
ls "$1/sessions"
kill -TERM $pid; wait $pid; echo "exit $?"`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script, bin, mnt)
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	done := make(chan struct{})
	var out []byte
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("mounting without fusermount hung: %s", out)
	}
	require.NoError(t, err, string(out))
	// ls lists s1 and the daemon exits 0 (its own lines may come before or after ls's).
	assert.Regexp(t, `(?m)^s1$`, string(out))
	assert.True(t, strings.HasSuffix(string(out), "\nexit 0\n"), "%s", out)
}
