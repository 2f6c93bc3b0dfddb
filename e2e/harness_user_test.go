package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// needUserMounts: a normal user's mount needs root here (to switch users), fusermount3 and /dev/fuse open to all.
func needUserMounts(t *testing.T) {
	t.Helper()
	needFUSE(t)
	need(t, os.Geteuid() == 0, "switching users needs root")
	_, err := exec.LookPath("fusermount3")
	need(t, err == nil, "fusermount3 is missing (apt-get install fuse3)")
	fi, err := os.Stat("/dev/fuse")
	need(t, err == nil && fi.Mode().Perm()&0o006 == 0o006, "/dev/fuse is not open to normal users (chmod 0666 /dev/fuse, the distributions' default; .ci/run does)")
}

// userPlace is a folder of uid 65534's in /tmp (a test's temporary folder is root's alone: the user could not
// reach it) holding a store and a mountpoint, with the environment that user's sessionfs runs with there (no
// XDG_RUNTIME_DIR: its control folder is <base>/.local/state/sessionfs/run).
type userPlace struct {
	base, store, mnt string
	env              []string
	nobody           *syscall.SysProcAttr
}

// newUserPlace makes the place, and the folders named more in it, the user's.
func newUserPlace(t *testing.T, more ...string) *userPlace {
	t.Helper()
	base, err := os.MkdirTemp("/tmp", "sessionfs-user-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	u := &userPlace{base: base, store: filepath.Join(base, "store"), mnt: filepath.Join(base, "mnt"),
		nobody: &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}}
	u.env = append(os.Environ(), "SESSIONFS_STORE="+u.store, "HOME="+base, "XDG_RUNTIME_DIR=")
	dirs := []string{base, u.store, u.mnt}
	for _, d := range more {
		dirs = append(dirs, filepath.Join(base, d))
	}
	for _, d := range dirs {
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.Chown(d, 65534, 65534))
	}
	return u
}

// command is exe with args, run as the user in the place.
func (u *userPlace) command(exe string, args ...string) *exec.Cmd {
	cmd := exec.Command(exe, args...)
	cmd.Env, cmd.SysProcAttr, cmd.Dir = u.env, u.nobody, u.base
	return cmd
}

// run runs exe with args as the user: its output, stdout and stderr together.
func (u *userPlace) run(exe string, args ...string) (string, error) {
	out, err := u.command(exe, args...).CombinedOutput()
	return string(out), err
}

// binary is the binary under test copied into the place, where the user may run it, with the whole CLI beside it.
func (u *userPlace) binary(t *testing.T) string {
	t.Helper()
	return installSessionfs(t, u.base)
}

// startMount starts exe's mount of the place as the user, its output in log, and waits for it to serve. Cleanup
// unmounts it as the user and sees the daemon gone, with every process the test adds to held (the holder, the
// daemons that took over), each killed if it outlives the mount by 10 s.
func (u *userPlace) startMount(t *testing.T, exe string, log *syncBuffer) (daemon *exec.Cmd, held *[]int) {
	t.Helper()
	daemon = exec.Command(exe, "mount", u.mnt)
	daemon.Env, daemon.SysProcAttr = u.env, u.nobody
	daemon.Stdout, daemon.Stderr = log, log
	require.NoError(t, daemon.Start())
	held = &[]int{daemon.Process.Pid}
	t.Cleanup(func() {
		_, _ = u.run(exe, "unmount", u.mnt)
		if isFUSEMount(u.mnt) {
			_ = syscall.Unmount(u.mnt, syscall.MNT_DETACH)
		}
		for _, pid := range *held {
			if pid > 0 && !waitGone(pid, 10*time.Second) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	eventually(t, 15*time.Second, func() bool { return strings.Contains(log.String(), "sessionfs: serving ") && isFUSEMount(u.mnt) },
		"the user's mount serves: %s", log)
	return daemon, held
}
