package e2e

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The mount as root binds each session's workspace, app and mcps from the store over its own folders, so a
// person's shell, grep -r or docker run -v on the mount works at the disk's speed (mount/binds.go).

func TestMountBindsHeavyFolders(t *testing.T) {
	needRootMount(t)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	fill(t, store, "s1", "app", "mcps")
	m := mount(t, store, "--verbose")
	// The line after "serving", which is what the harness waits for.
	eventually(t, 5*time.Second, func() bool { return strings.Contains(m.log.String(), "are binds of the store's folders") },
		"the mount says its folders are binds: %s", m.log)
	binds := waitBound(t, m, "s1")
	require.Len(t, binds, 3)
	for _, dir := range []string{"workspace", "app", "mcps"} {
		e := binds[dir]
		assert.NotContains(t, e.fstype, "fuse", "%s is the store's filesystem", dir)
		assert.Equal(t, filepath.Join(store, "sessions", "s1", dir), e.root, "%s shows the store's folder", dir)
		assert.Contains(t, e.opts, "nosuid")
		assert.Contains(t, e.opts, "nodev")
	}
	// Both ways at once, no cache between them.
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "s1", "workspace", "from-store"), []byte("a"), 0o644))
	b, err := os.ReadFile(filepath.Join(m.session("s1"), "workspace", "from-store"))
	require.NoError(t, err)
	assert.Equal(t, "a", string(b))
	require.NoError(t, os.WriteFile(filepath.Join(m.session("s1"), "workspace", "from-mount"), []byte("b"), 0o644))
	assert.FileExists(t, filepath.Join(store, "sessions", "s1", "workspace", "from-mount"))
	// .claude (the views) stays FUSE: nothing is mounted there.
	for _, e := range mountsUnder(t, m.session("s1")) {
		assert.NotContains(t, e.point, ".claude")
	}
	r := cli(t, store, "doctor")
	assert.Regexp(t, `binds +3 folders bound over `+m.mnt, r.stdout+r.stderr)
	// A session made while mounted is bound at once, as is one made through the mount: its workspace; its app
	// and mcps are empty, and are bound once they hold something, made through the mount or behind it.
	ok(t, store, "new", "s2")
	waitBound(t, m, "s2")
	require.NoError(t, os.Mkdir(m.session("s3"), 0o755))
	waitBound(t, m, "s3")
	time.Sleep(200 * time.Millisecond)
	assert.Len(t, bindsOf(t, m, "s2"), 1, "empty app and mcps are not bound")
	require.NoError(t, os.WriteFile(filepath.Join(m.session("s2"), "app", "run.sh"), []byte("x"), 0o644))
	eventually(t, 5*time.Second, func() bool { _, ok := bindsOf(t, m, "s2")["app"]; return ok }, "s2's app bound once it holds something")
	assert.FileExists(t, filepath.Join(store, "sessions", "s2", "app", "run.sh"))
	fill(t, store, "s3", "mcps")
	_, err = os.ReadDir(filepath.Join(m.session("s3"), "mcps"))
	require.NoError(t, err)
	eventually(t, 5*time.Second, func() bool { _, ok := bindsOf(t, m, "s3")["mcps"]; return ok }, "s3's mcps, filled behind the mount, bound when looked up")
	b, err = os.ReadFile(filepath.Join(m.session("s3"), "mcps", "f"))
	require.NoError(t, err)
	assert.Equal(t, "mcps", string(b))
	r = cli(t, store, "doctor")
	assert.Regexp(t, `binds +7 folders bound over `+m.mnt, r.stdout+r.stderr)
}

// TestMountBindsReadOnly: a read-only mount's binds are read-only too.
func TestMountBindsReadOnly(t *testing.T) {
	needRootMount(t)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store, "--read-only")
	binds := waitBound(t, m, "s1")
	assert.True(t, strings.HasPrefix(binds["workspace"].opts, "ro"), binds["workspace"].opts)
	err := os.WriteFile(filepath.Join(m.session("s1"), "workspace", "x"), []byte("a"), 0o644)
	assert.ErrorContains(t, err, "read-only file system")
}

// TestRmRfOfABoundSession: rm -rf of a bound session through the mount moves all of it to the trash at once,
// workspace included, with no error (its binds are detached first, never EBUSY), and trash restore brings it
// back bound.
func TestRmRfOfABoundSession(t *testing.T) {
	needRootMount(t)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	fill(t, store, "s1", "app", "mcps")
	m := mount(t, store)
	waitBound(t, m, "s1")
	ws := filepath.Join(m.session("s1"), "workspace")
	for i := range 50 {
		d := filepath.Join(ws, fmt.Sprintf("d%d", i%5), "deep")
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d", i)), []byte("keep"), 0o644))
	}
	start := time.Now()
	out, err := exec.Command("rm", "-rf", m.session("s1")).CombinedOutput()
	took := time.Since(start)
	require.NoError(t, err, "%s", out)
	assert.Empty(t, string(out))
	t.Logf("rm -rf of the bound session took %v", took)
	assert.Less(t, took, 2*time.Second, "no wait on the binds (rm -rf's speed is make bench's)")
	assert.NoDirExists(t, m.session("s1"))
	assert.Empty(t, mountsUnder(t, m.mnt), "no bind is left")
	trashed := trashedSessions(t, store)
	require.Len(t, trashed, 1)
	n := 0
	require.NoError(t, filepath.WalkDir(filepath.Join(store, "trash", trashed[0].Name(), "workspace"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	}))
	assert.Equal(t, 50, n, "every workspace file is in the trash")
	ok(t, store, "trash", "restore", "s1")
	waitBound(t, m, "s1")
	assert.FileExists(t, filepath.Join(m.session("s1"), "workspace", "d0", "deep", "f0"))
}

// TestBindsFollowRenameAndUnmount: rename moves the binds, unmount and a stopped daemon leave none, and those of
// a killed daemon are cleared by the next mount.
func TestBindsFollowRenameAndUnmount(t *testing.T) {
	needRootMount(t)
	store := t.TempDir()
	ok(t, store, "new", "a")
	fill(t, store, "a", "app")
	m := mount(t, store)
	waitBound(t, m, "a")
	ok(t, store, "rename", "a", "b")
	waitBound(t, m, "b")
	assert.Empty(t, bindsOf(t, m, "a"))

	r := cli(t, store, "unmount", m.mnt)
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "busy", "the binds went first, so the mount was not busy")
	assert.Empty(t, mountsUnder(t, m.mnt))
	assert.False(t, isFUSEMount(m.mnt))
	_ = m.cmd.Wait()

	m.start(t)
	waitBound(t, m, "b")
	m.stop(t)
	assert.Empty(t, mountsUnder(t, m.mnt), "a stopped daemon leaves no bind")

	m.start(t)
	waitBound(t, m, "b")
	m.kill(t)
	require.NotEmpty(t, mountsUnder(t, m.mnt), "a killed daemon leaves its binds")
	m.start(t)
	binds := waitBound(t, m, "b")
	assert.Len(t, mountsUnder(t, m.mnt), len(binds), "the killed daemon's binds were cleared with its stale mount")
}

// TestRenameBehindAHeldSession: a session renamed behind the mount while the kernel still holds its folder's
// node (here an open descriptor; in the wild a bind being detached or an agent's cwd) shows its files and gets its
// binds under its new name. The new name has the old one's inode and birth time: it used to get the old name's
// node, whose lookups found nothing (TestBindsFollowRenameAndUnmount failed now and then on it).
func TestRenameBehindAHeldSession(t *testing.T) {
	needRootMount(t)
	for _, bound := range []bool{true, false} {
		t.Run(map[bool]string{true: "bound", false: "served through FUSE"}[bound], func(t *testing.T) {
			store := t.TempDir()
			ok(t, store, "new", "a")
			fill(t, store, "a", "app")
			var extra []string
			if !bound {
				extra = []string{"--max-binds", "0"}
			}
			m := mount(t, store, extra...)
			held, err := unix.Open(m.session("a"), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			require.NoError(t, err)
			defer unix.Close(held)
			if bound {
				waitBound(t, m, "a")
			}
			ok(t, store, "rename", "a", "b")
			eventually(t, 5*time.Second, func() bool {
				_, err := os.Stat(m.session("a"))
				return errors.Is(err, fs.ErrNotExist)
			}, "the old name is gone from the mount")
			got, err := os.ReadFile(filepath.Join(m.session("b"), "app", "f"))
			require.NoError(t, err, "the renamed session's files, while its old node is held")
			assert.Equal(t, "app", string(got))
			assert.DirExists(t, filepath.Join(m.session("b"), "workspace"))
			// The new name's folder is watched: a file made behind the mount shows in its cached listing.
			_, err = os.ReadDir(m.session("b"))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "b", "later"), []byte("x"), 0o644))
			eventually(t, 5*time.Second, func() bool {
				ents, _ := os.ReadDir(m.session("b"))
				return slices.ContainsFunc(ents, func(e os.DirEntry) bool { return e.Name() == "later" })
			}, "a file made in the renamed session behind the mount shows in its listing")
			if bound {
				waitBound(t, m, "b")
			} else {
				assert.Empty(t, mountsUnder(t, m.mnt), "--max-binds 0 binds nothing")
			}
		})
	}
}

// TestMaxBinds: past --max-binds, the least recently used idle sessions are released; --max-binds 0 binds none.
func TestMaxBinds(t *testing.T) {
	needRootMount(t)
	store := t.TempDir()
	for _, id := range []string{"s1", "s2", "s3"} {
		ok(t, store, "new", id)
	}
	m := mount(t, store, "--max-binds", "0", "--verbose")
	_, err := os.Stat(filepath.Join(m.session("s1"), "workspace"))
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond)
	assert.Empty(t, mountsUnder(t, m.mnt), "--max-binds 0 binds nothing")
	assert.NotContains(t, m.log.String(), "are binds")
	m.stop(t)

	// Sessions as new makes them: app and mcps empty, so one bind each (the workspace).
	m.start(t, "--max-binds", "2")
	eventually(t, 5*time.Second, func() bool { return len(mountsUnder(t, m.mnt)) == 2 }, "two sessions bound")
	assert.Len(t, mountsUnder(t, m.mnt), 2, "no more than two sessions")
	m.stop(t)

	// A session someone uses at once is not pushed out by the recently active ones bound at start.
	require.NoError(t, os.Chtimes(filepath.Join(store, "sessions", "s1"), time.Now().Add(-time.Hour), time.Now().Add(-time.Hour)))
	m.start(t, "--max-binds", "2")
	_, err = os.Stat(filepath.Join(m.session("s1"), "workspace"))
	require.NoError(t, err)
	waitBound(t, m, "s1")
	time.Sleep(300 * time.Millisecond)
	assert.Len(t, bindsOf(t, m, "s1"), 1, "the session in use stays bound")
	assert.Len(t, mountsUnder(t, m.mnt), 2)
	m.stop(t)

	// A session in use (a process's folder is inside) stays past the limit, and is released once idle.
	m.start(t, "--max-binds", "1")
	_, err = os.Stat(filepath.Join(m.session("s1"), "workspace"))
	require.NoError(t, err)
	waitBound(t, m, "s1")
	inside := exec.Command("sleep", "60")
	inside.Dir = filepath.Join(m.session("s1"), "workspace")
	require.NoError(t, inside.Start())
	t.Cleanup(func() { _ = inside.Process.Kill(); _ = inside.Wait() })
	_, err = os.Stat(filepath.Join(m.session("s2"), "workspace"))
	require.NoError(t, err)
	waitBound(t, m, "s2")
	time.Sleep(300 * time.Millisecond)
	assert.Len(t, bindsOf(t, m, "s1"), 1, "the session in use stays bound past the limit")
	require.NoError(t, inside.Process.Kill())
	_ = inside.Wait()
	eventually(t, 5*time.Second, func() bool { return len(mountsUnder(t, m.mnt)) == 1 }, "the limit holds once the session is idle")
	m.stop(t)

	// A walk of many sessions never holds more than the limit (it bound a whole walk first, and ran out of
	// descriptors on 10,000), and pushes out a few bound sessions at most (16 at once, then 16 a second:
	// bindlimit.go), not one for each session it passes: the rest of it is served through FUSE.
	for i := range 40 {
		id := fmt.Sprintf("w%02d", i)
		ok(t, store, "new", id)
		// Older than s1-s3, w00 the newest of them: the five bound at start are s1-s3, w00 and w01.
		old := time.Now().Add(-2*time.Hour - time.Duration(i)*time.Second)
		require.NoError(t, os.Chtimes(filepath.Join(store, "sessions", id), old, old))
	}
	m.start(t, "--max-binds", "5")
	// The helper is up (on a busy machine its start takes a while): the five most recent sessions are bound.
	eventually(t, 10*time.Second, func() bool { return len(mountsUnder(t, m.mnt)) == 5 }, "the most recent sessions bound at start")
	most, counted := 0, true
	count := func() {
		n, ok := childMounts(t, m.mnt)
		most, counted = max(most, n), counted && ok
	}
	for i := range 40 {
		_, err := os.Stat(filepath.Join(m.session(fmt.Sprintf("w%02d", i)), "workspace"))
		require.NoError(t, err)
		count()
	}
	eventually(t, 10*time.Second, func() bool { count(); return len(mountsUnder(t, m.mnt)) == 5 }, "five in all after the walk")
	// A session used after the walk is bound (a token is due again), the least recently used released.
	eventually(t, 10*time.Second, func() bool {
		_, _ = os.Stat(filepath.Join(m.session("w39"), fmt.Sprintf("probe-%d", time.Now().UnixNano())))
		count()
		return len(bindsOf(t, m, "w39")) == 1 && len(mountsUnder(t, m.mnt)) == 5
	}, "the session used after the walk bound, five in all: %v", mountsUnder(t, m.mnt))
	if counted { // the mount table read a page at a time is no measure of one moment (childMounts)
		assert.LessOrEqual(t, most, 5+1, "at most the limit, and the session being bound")
	} else {
		t.Log("listmount(2) is missing (kernel before 6.8): the number of binds at once is not checked")
	}
}

// TestUserDockerRunOnTheMount: a person's own docker run -v <mount>/sessions/<id>:/session (not sessionfs run)
// sees the binds (Docker binds recursively), and keeps its view when the host releases them.
func TestUserDockerRunOnTheMount(t *testing.T) {
	needRootMount(t)
	images(t, needDocker(t), "")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	waitBound(t, m, "s1")
	out, err := exec.Command("docker", "run", "--rm", "-v", m.session("s1")+":/session", busyboxImage,
		"sh", "-c", "grep ' /session/workspace ' /proc/self/mountinfo; echo made > /session/workspace/by-container").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.NotContains(t, string(out), "fuse", "the container's workspace is the store's filesystem: %s", out)
	assert.FileExists(t, filepath.Join(store, "sessions", "s1", "workspace", "by-container"))

	// A running container keeps its view when the host's binds go.
	name := "sessionfs-e2e-binds-" + runTag
	out, err = exec.Command("docker", "run", "-d", "--name", name, "-v", m.session("s1")+":/session", busyboxImage, "sleep", "60").CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
	r := cli(t, store, "unmount", m.mnt)
	require.Equal(t, 0, r.code, r.stderr)
	out, err = exec.Command("docker", "exec", name, "cat", "/session/workspace/by-container").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "made\n", string(out))
}

// childMounts counts the mounts made directly on the mount at mnt (a session's binds are), in one listmount(2):
// the kernel lists them under its mount lock, so the count is of one moment. /proc/self/mountinfo is read a page
// at a time, and a walk that binds one session and releases another between two pages shows both: more binds
// than were ever there at once. ok is false on a kernel without listmount (before 6.8).
func childMounts(t *testing.T, mnt string) (n int, ok bool) {
	t.Helper()
	var stx unix.Statx_t
	require.NoError(t, unix.Statx(unix.AT_FDCWD, mnt, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID_UNIQUE, &stx))
	if stx.Mask&unix.STATX_MNT_ID_UNIQUE == 0 {
		return 0, false
	}
	// struct mnt_id_req, version 0 (24 bytes).
	req := struct {
		size, spare  uint32
		mntID, param uint64
	}{size: 24, mntID: stx.Mnt_id}
	ids := make([]uint64, 1<<14)
	r, _, errno := unix.Syscall6(sysListmount, uintptr(unsafe.Pointer(&req)), uintptr(unsafe.Pointer(&ids[0])),
		uintptr(len(ids)), 0, 0, 0)
	if errno == unix.ENOSYS {
		return 0, false
	}
	require.Zero(t, errno, "listmount %s", mnt)
	return int(r), true
}

// sysListmount is listmount(2)'s number in the generic table (x86-64 and arm64 alike).
const sysListmount = 458

// TestBoundFoldersAreNotWatched: what the kernel serves through a bind never reaches FUSE, so the daemon holds no
// inotify watch on it: an agent's writes in its workspace, through the mount or in the store's folder, wake the
// daemon for nothing (they doubled the cost of small appends). The session's own folder stays watched (a workspace
// replaced behind the mount is bound again), and a workspace FUSE serves (--max-binds 0, or a session released
// past the limit: TestFolderListingsWithoutOpendir) is watched as before.
func TestBoundFoldersAreNotWatched(t *testing.T) {
	needRootMount(t)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ws := filepath.Join(store, "sessions", "s1", "workspace")
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "src"), 0o755))
	inode := func(p string) uint64 {
		var st syscall.Stat_t
		require.NoError(t, syscall.Stat(p, &st))
		return st.Ino
	}

	m := mount(t, store)
	_, err := os.Stat(filepath.Join(m.session("s1"), "workspace", "src"))
	require.NoError(t, err)
	waitBound(t, m, "s1")
	f := filepath.Join(m.session("s1"), "workspace", "log.jsonl")
	for i := range 1000 {
		require.NoError(t, appendLine(f, fmt.Sprintf(`{"n":%d}`, i)))
	}
	// FUSE served the workspace before its bind (the lookup of src): watched until its events find the bind.
	eventually(t, 5*time.Second, func() bool {
		require.NoError(t, appendLine(f, "{}"))
		return !watchedInodes(t, m.cmd.Process.Pid)[inode(ws)]
	}, "the bound workspace is not watched")
	watched := watchedInodes(t, m.cmd.Process.Pid)
	assert.True(t, watched[inode(filepath.Join(store, "sessions", "s1"))], "the session's folder is watched")
	assert.False(t, watched[inode(filepath.Join(ws, "src"))], "nor a folder beneath it")
	m.stop(t)

	m = mount(t, store, "--max-binds", "0")
	_, err = os.Stat(filepath.Join(m.session("s1"), "workspace", "src", "x"))
	require.True(t, os.IsNotExist(err), "%v", err)
	watched = watchedInodes(t, m.cmd.Process.Pid)
	assert.True(t, watched[inode(ws)], "a workspace FUSE serves is watched")
	assert.True(t, watched[inode(filepath.Join(ws, "src"))], "and its folders")
}

// watchedInodes are the inode numbers process pid watches with inotify for their writes (its fdinfo: "inotify
// wd:1 ino:1a2b sdev:... mask:fce ...", IN_MODIFY in the mask): the watches a write costs an event. The index's
// watch of folders' names and attributes (layout.IndexWatch) is not one.
func watchedInodes(t *testing.T, pid int) map[uint64]bool {
	t.Helper()
	out := map[uint64]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fdinfo", pid))
	require.NoError(t, err)
	for _, fd := range fds {
		info, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd.Name()))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(info), "\n") {
			if !strings.HasPrefix(l, "inotify ") {
				continue
			}
			var ino, mask uint64
			for _, f := range strings.Fields(l) {
				if hex, ok := strings.CutPrefix(f, "ino:"); ok {
					ino, _ = strconv.ParseUint(hex, 16, 64)
				}
				if hex, ok := strings.CutPrefix(f, "mask:"); ok {
					mask, _ = strconv.ParseUint(hex, 16, 64)
				}
			}
			if ino != 0 && mask&syscall.IN_MODIFY != 0 {
				out[ino] = true
			}
		}
	}
	return out
}

// appendLine appends line and a newline to file p, as an agent writes its log: open, write, close.
func appendLine(p, line string) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
