package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// asNobody runs a shell command line as uid/gid 65534.
func asNobody(line string) (string, error) {
	cmd := exec.Command("sh", "-c", line)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestOtherUsers: without --allow-other other users get EACCES; with it, the kernel checks permissions, and a
// write by an unprivileged user clears set-user-ID (the daemon's job under HANDLE_KILLPRIV_V2).
func TestOtherUsers(t *testing.T) {
	need(t, os.Geteuid() == 0, "switching users needs root")
	store := t.TempDir()
	require.NoError(t, os.Chmod(store, 0o755))
	ok(t, store, "new", "s1")
	m := mount(t, store)
	// Let others reach the mountpoint (t.TempDir makes 0700 folders), so what is checked is the mount's answer.
	for d := filepath.Dir(m.mnt); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		require.NoError(t, os.Chmod(d, 0o755))
	}
	out, err := asNobody("ls " + m.mnt + "/sessions")
	assert.Error(t, err)
	assert.Contains(t, out, "Permission denied")
	if os.Geteuid() == 0 {
		// The session's folders bound from the store are reached only through the mount's: denied alike.
		waitBound(t, m, "s1")
		out, err = asNobody("ls " + filepath.Join(m.session("s1"), "workspace"))
		assert.Error(t, err)
		assert.Contains(t, out, "Permission denied")
	}
	m.stop(t)

	m.start(t, "--allow-other")
	ws := filepath.Join(m.session("s1"), "workspace")
	_, err = asNobody("ls " + ws)
	require.NoError(t, err, "with --allow-other others may read")
	out, err = asNobody("touch " + ws + "/nope")
	assert.Error(t, err, "the kernel checks permissions: the workspace is root's 0755")
	assert.Contains(t, out, "Permission denied")

	// As another uid: chmod of its own file works, chown to someone else is refused, as on any filesystem.
	require.NoError(t, os.Chmod(filepath.Join(store, "sessions", "s1", "workspace"), 0o777))
	// A change behind the mount shows once the watcher's invalidation lands (milliseconds): the kernel checks the
	// mode it holds.
	eventually(t, 2*time.Second, func() bool {
		fi, err := os.Stat(ws)
		return err == nil && fi.Mode().Perm() == 0o777
	}, "the chmod made in the store shows through the mount")
	out, err = asNobody("touch " + ws + "/mine && chmod 600 " + ws + "/mine && stat -c %a:%u " + ws + "/mine")
	require.NoError(t, err, out)
	assert.Equal(t, "600:65534\n", out, "the file belongs to its maker, with the mode it asked for")
	out, err = asNobody("chown 0 " + ws + "/mine")
	assert.Error(t, err)
	assert.Contains(t, out, "Operation not permitted")

	suid := filepath.Join(ws, "suid")
	require.NoError(t, os.WriteFile(suid, []byte("#!/bin/sh\n"), 0o777))
	require.NoError(t, os.Chmod(suid, 0o4777))
	out, err = asNobody("echo more >> " + suid)
	require.NoError(t, err, out)
	fi, err := os.Stat(filepath.Join(store, "sessions", "s1", "workspace", "suid"))
	require.NoError(t, err)
	assert.Zero(t, fi.Mode()&os.ModeSetuid, "a write by an unprivileged user clears set-user-ID")
	assert.Equal(t, os.FileMode(0o777), fi.Mode().Perm())
}

// TestMountAsNormalUser: a normal user mounts through fusermount3 and uses the mount like root does.
func TestMountAsNormalUser(t *testing.T) {
	needUserMounts(t)
	u := newUserPlace(t)
	base, store, mnt, nobody := u.base, u.store, u.mnt, u.nobody
	daemon := exec.Command(bin, "mount", mnt)
	daemon.Env = append(os.Environ(), "SESSIONFS_STORE="+store, "HOME="+base)
	daemon.SysProcAttr = nobody
	var log strings.Builder
	daemon.Stdout, daemon.Stderr = &log, &log
	require.NoError(t, daemon.Start())
	t.Cleanup(func() {
		_ = daemon.Process.Signal(syscall.SIGTERM)
		_ = daemon.Wait()
		if isFUSEMount(mnt) {
			_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
	})
	eventually(t, 10*time.Second, func() bool { return isFUSEMount(mnt) }, "the user's mount did not come up: %s", &log)

	as := func(line string) string {
		cmd := exec.Command("sh", "-c", line)
		cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store, "HOME="+base)
		cmd.SysProcAttr = nobody
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s: %s", line, out)
		return string(out)
	}
	as("mkdir " + mnt + "/sessions/mine && echo hi > " + mnt + "/sessions/mine/workspace/f")
	assert.Equal(t, "hi\n", as("cat "+mnt+"/sessions/mine/workspace/f"))
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(filepath.Join(store, "sessions", "mine", "workspace", "f"), &st))
	assert.Equal(t, uint32(65534), st.Uid)

	// A normal user's exec on the mount works on the store's own folders (a user namespace of its own), as
	// itself and with no capability.
	out := as(bin + ` exec mine -- sh -c 'id -u; grep CapEff /proc/self/status; grep " ` + mnt + `/sessions/mine/workspace " /proc/self/mountinfo | wc -l; echo n > native'`)
	assert.Equal(t, "65534\nCapEff:\t0000000000000000\n1\n", out)
	require.NoError(t, syscall.Stat(filepath.Join(store, "sessions", "mine", "workspace", "native"), &st))
	assert.Equal(t, uint32(65534), st.Uid)
	as(bin + " unmount " + mnt)
	assert.False(t, isFUSEMount(mnt), "the user unmounted it with fusermount3")
}
