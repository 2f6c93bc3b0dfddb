package bind

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// needRoot fails under CI (where the tests run as root) and skips elsewhere: binds need CAP_SYS_ADMIN.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("requirement missing under CI: root (binds need CAP_SYS_ADMIN)")
	}
	t.Skip("skipped: binds need root")
}

func openPath(t *testing.T, p string) int {
	t.Helper()
	fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// mountOptions are the per-mount options the mount table shows for the mount at p ("" if none).
func mountOptions(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	opts := ""
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 5 && f[4] == p {
			opts = f[5] // the last one is the top of the stack
		}
	}
	return opts
}

func TestAttachFlagsAndDetach(t *testing.T) {
	needRoot(t)
	src, dst := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "f"), []byte("x"), 0o644))
	m, err := Attach(openPath(t, src), openPath(t, dst), ReadOnly)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Detach() })
	b, err := os.ReadFile(filepath.Join(dst, "f"))
	require.NoError(t, err)
	assert.Equal(t, "x", string(b))
	assert.ErrorIs(t, os.WriteFile(filepath.Join(dst, "g"), nil, 0o644), unix.EROFS)
	opts := strings.Split(mountOptions(t, dst), ",")
	assert.Subset(t, opts, []string{"ro", "nosuid", "nodev"})
	assert.True(t, m.At(openPath(t, filepath.Dir(dst)), filepath.Base(dst)))
	require.NoError(t, m.Detach())
	assert.Empty(t, mountOptions(t, dst), "detached")
	assert.NoFileExists(t, filepath.Join(dst, "f"))
}

func TestOpenFolderRefusesWhatIsNotAFolder(t *testing.T) {
	needRoot(t)
	sess, host := t.TempDir(), t.TempDir()
	require.NoError(t, os.Symlink(host, filepath.Join(sess, "link")))
	require.NoError(t, unix.Mkfifo(filepath.Join(sess, "fifo"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(sess, "file"), nil, 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(sess, "dir", "mnt"), 0o755))
	require.NoError(t, os.Symlink("/", filepath.Join(sess, "dir", "up")))
	require.NoError(t, unix.Mount("tmpfs", filepath.Join(sess, "dir", "mnt"), "tmpfs", 0, ""))
	t.Cleanup(func() { _ = unix.Unmount(filepath.Join(sess, "dir", "mnt"), unix.MNT_DETACH) })
	fd := openPath(t, sess)
	for _, rel := range []string{"link", "fifo", "file", "dir/mnt", "dir/up/etc", "../" + filepath.Base(host)} {
		_, err := OpenFolder(fd, rel)
		assert.Error(t, err, rel)
		if !errors.Is(err, ErrNotFolder) {
			assert.ErrorIs(t, err, unix.EXDEV, "%s: refused as outside the session", rel)
		}
		_, err = OpenPlace(fd, rel)
		assert.Error(t, err, rel)
	}
	_, err := OpenFolder(fd, "/etc")
	assert.ErrorIs(t, err, unix.ENOENT, "an absolute name is taken beneath the session")
	got, err := OpenFolder(fd, "dir")
	require.NoError(t, err)
	unix.Close(got)
}

func TestReleaseKeepsABindInUse(t *testing.T) {
	needRoot(t)
	src, parent := t.TempDir(), t.TempDir()
	dst := filepath.Join(parent, "ws")
	require.NoError(t, os.Mkdir(dst, 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(src, "d"), 0o755))
	m, err := Attach(openPath(t, src), openPath(t, dst), 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Detach() })
	pfd := openPath(t, parent)
	inside, err := os.Open(filepath.Join(dst, "d"))
	require.NoError(t, err)
	gone, err := m.Release(pfd, "ws")
	require.NoError(t, err)
	assert.False(t, gone, "a process inside keeps it")
	assert.True(t, m.At(pfd, "ws"), "still bound, and its descriptor taken again")
	require.NoError(t, inside.Close())
	gone, err = m.Release(pfd, "ws")
	require.NoError(t, err)
	assert.True(t, gone)
	assert.Empty(t, mountOptions(t, dst))
}

func TestDetachAtOnlyThatMount(t *testing.T) {
	needRoot(t)
	src, parent := t.TempDir(), t.TempDir()
	dst := filepath.Join(parent, "ws")
	require.NoError(t, os.Mkdir(dst, 0o755))
	m, err := Attach(openPath(t, src), openPath(t, dst), 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Detach() })
	root := openPath(t, parent)
	assert.Error(t, DetachAt(root, "ws", m.ID+1), "another mount's id: left alone")
	assert.NotEmpty(t, mountOptions(t, dst))
	// A link to the bind's folder is not followed.
	require.NoError(t, os.Symlink(dst, filepath.Join(parent, "link")))
	assert.Error(t, DetachAt(root, "link", m.ID))
	assert.NotEmpty(t, mountOptions(t, dst))
	require.NoError(t, DetachAt(root, "ws", m.ID))
	assert.Empty(t, mountOptions(t, dst))
}

// TestNoDevicesBeneath: a device node on a mount, or on one beneath it, opens nothing once NoDevicesBeneath ran
// there, until AllowDevices gives that one mount (not the one beneath) its devices back.
func TestNoDevicesBeneath(t *testing.T) {
	needRoot(t)
	top := filepath.Join(t.TempDir(), "top")
	sub := filepath.Join(top, "sub")
	require.NoError(t, os.Mkdir(top, 0o755))
	require.NoError(t, unix.Mount("tmpfs", top, "tmpfs", 0, ""))
	t.Cleanup(func() { _ = unix.Unmount(top, unix.MNT_DETACH) })
	require.NoError(t, os.Mkdir(sub, 0o755))
	require.NoError(t, unix.Mount("tmpfs", sub, "tmpfs", 0, ""))
	t.Cleanup(func() { _ = unix.Unmount(sub, unix.MNT_DETACH) })
	opens := func(dir string) error {
		fd, err := unix.Open(filepath.Join(dir, "null"), unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}
	for _, d := range []string{top, sub} {
		require.NoError(t, unix.Mknod(filepath.Join(d, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
		require.NoError(t, opens(d), "%s honours devices to begin with", d)
	}
	fd := openPath(t, top)
	root, err := IsMountRoot(fd)
	require.NoError(t, err)
	assert.True(t, root)
	nullFd, err := unix.Open(filepath.Join(top, "null"), unix.O_PATH|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(nullFd)
	root, err = IsMountRoot(nullFd)
	require.NoError(t, err)
	assert.False(t, root, "a file on the mount is not its root")

	require.NoError(t, NoDevicesBeneath(fd))
	for _, d := range []string{top, sub} {
		assert.ErrorIs(t, opens(d), unix.EACCES, d)
		assert.Subset(t, strings.Split(mountOptions(t, d), ","), []string{"nosuid", "nodev"}, d)
		honours, err := HonoursDevices(openPath(t, d))
		require.NoError(t, err)
		assert.False(t, honours, d)
	}
	require.NoError(t, AllowDevices(fd))
	assert.NoError(t, opens(top), "given back")
	assert.ErrorIs(t, opens(sub), unix.EACCES, "the mount beneath stays nodev")
	require.NoError(t, os.Mkdir(filepath.Join(sub, "dir"), 0o755))
	assert.ErrorIs(t, AllowDevices(openPath(t, filepath.Join(sub, "dir"))), unix.EINVAL, "a folder that is no mount's root")
}

// TestTerminals: a devpts instance of its own shows only the terminals made through it, and they work.
func TestTerminals(t *testing.T) {
	needRoot(t)
	place := t.TempDir()
	m, err := Terminals(openPath(t, place))
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Detach() })
	var fs unix.Statfs_t
	require.NoError(t, unix.Statfs(place, &fs))
	assert.Equal(t, int64(unix.DEVPTS_SUPER_MAGIC), int64(fs.Type))
	assert.Subset(t, strings.Split(mountOptions(t, place), ","), []string{"nosuid", "noexec"})
	assert.NotContains(t, strings.Split(mountOptions(t, place), ","), "nodev", "its terminals are devices")
	names := func() []string {
		ents, err := os.ReadDir(place)
		require.NoError(t, err)
		var n []string
		for _, e := range ents {
			n = append(n, e.Name())
		}
		return n
	}
	assert.Equal(t, []string{"ptmx"}, names(), "no terminal but those made through it")

	master, err := os.OpenFile(filepath.Join(place, "ptmx"), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	defer master.Close()
	st, err := master.Stat()
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o666), st.Mode().Perm(), "ptmxmode")
	require.NoError(t, unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetUint32(int(master.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	pts := filepath.Join(place, strconv.Itoa(int(n)))
	assert.Equal(t, []string{strconv.Itoa(int(n)), "ptmx"}, names())
	slave, err := os.OpenFile(pts, os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	defer slave.Close()
	st, err = slave.Stat()
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o620), st.Mode().Perm(), "mode")
	_, err = slave.WriteString("ping\n")
	require.NoError(t, err)
	buf := make([]byte, 16)
	got, err := master.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "ping\r\n", string(buf[:got]))
}
