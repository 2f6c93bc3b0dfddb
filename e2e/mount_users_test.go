package e2e

import (
	"errors"
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

// TestTranscriptTrash: removing transcripts through the mount moves them to the session's trash; the CLI lists
// and restores them; gc --trash purges them only when asked.
func TestTranscriptTrash(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	const uuid = "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01"
	view := filepath.Join(m.session("s1"), ".claude", "projects", "-home-u-proj")
	canonical := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
	require.NoError(t, os.WriteFile(filepath.Join(view, uuid+".jsonl"), []byte("{\"type\":\"user\"}\n"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(view, uuid, "subagents"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(view, uuid, "subagents", "agent-1.jsonl"), []byte("{}\n"), 0o600))

	sh(t, view, "rm -rf "+uuid+".jsonl "+uuid)
	assert.NoFileExists(t, filepath.Join(canonical, uuid+".jsonl"))
	assert.NoDirExists(t, filepath.Join(canonical, uuid))
	out := ok(t, store, "trash", "ls", "s1")
	assert.Contains(t, out, uuid)
	assert.Contains(t, out, "2  ", "the transcript and its subagent")

	assert.Contains(t, ok(t, store, "trash", "restore", "s1", uuid), "restored "+uuid+".jsonl")
	b, err := os.ReadFile(filepath.Join(view, uuid, "subagents", "agent-1.jsonl"))
	require.NoError(t, err, "restored, and visible through the mount")
	assert.Equal(t, "{}\n", string(b))
	assert.FileExists(t, filepath.Join(canonical, uuid+".jsonl"))
	r := cli(t, store, "trash", "restore", "s1", uuid)
	assert.Contains(t, r.stderr, "no conversation")

	// Files outside the transcript folder are deleted as usual; the trash empties only when asked.
	require.NoError(t, os.Remove(filepath.Join(view, uuid+".jsonl")))
	require.NoError(t, os.WriteFile(filepath.Join(m.session("s1"), "workspace", "tmp"), nil, 0o644))
	require.NoError(t, os.Remove(filepath.Join(m.session("s1"), "workspace", "tmp")))
	ok(t, store, "gc", "--idle", "1000h")
	assert.Contains(t, ok(t, store, "trash", "ls", "s1"), uuid, "gc without --trash keeps the trash")
	ok(t, store, "gc", "--trash")
	assert.NotContains(t, ok(t, store, "trash", "ls", "s1"), uuid)
}

// TestHostileInput: escaping symlinks are never followed by our own tools; damaged metadata is reported and the
// rest works; a full store and a store we may not write give one clear line and leave nothing half made.
func TestHostileInput(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ok(t, store, "new", "s2")
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "precious"), make([]byte, 1<<20), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(store, "sessions", "s1", "workspace", "escape")))
	require.NoError(t, os.Symlink("/", filepath.Join(store, "sessions", "s1", "workspace", "root")))

	out := ok(t, store, "ls")
	assert.NotContains(t, out, "MiB", "size accounting does not follow the links out of the session")
	ok(t, store, "rm", "s1")
	ok(t, store, "gc", "--trash")
	assert.FileExists(t, filepath.Join(outside, "precious"), "gc does not follow links out of the session")

	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "s2", "session.json"), []byte("{not json"), 0o644))
	ok(t, store, "new", "s3")
	out = ok(t, store, "ls")
	assert.Contains(t, out, "DAMAGED")
	assert.Contains(t, out, "s3")

	for _, id := range []string{"..", "../x", "a/b", "/etc", strings.Repeat("z", 4096), "é", "-rf", "a\nb"} {
		r := cli(t, store, "new", "--", id)
		assert.NotEqual(t, 0, r.code, "%q", id)
		assert.Contains(t, r.stderr, "invalid session id")
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1)
	}

	if os.Geteuid() == 0 {
		// A store we may not write: the CLI as another user.
		require.NoError(t, os.Chmod(store, 0o755))
		cmd := exec.Command(bin, "new", "theirs")
		cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "%s", out)
		assert.Contains(t, string(out), "permission denied")
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(string(out)), "\n")+1)

		// A full store: a small tmpfs.
		full := t.TempDir()
		require.NoError(t, exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", full).Run())
		t.Cleanup(func() { _ = exec.Command("umount", "-l", full).Run() })
		ok(t, full, "new", "keep")
		require.NoError(t, os.WriteFile(filepath.Join(full, "filler"), make([]byte, 200<<10), 0o644))
		prof := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(prof, "CLAUDE.md"), make([]byte, 64<<10), 0o644))
		r := cli(t, full, "new", "more", "--profile", prof)
		assert.NotEqual(t, 0, r.code)
		assert.Contains(t, r.stderr, "no space left")
		assert.NoDirExists(t, filepath.Join(full, "sessions", "more"))
		ents, _ := os.ReadDir(full)
		for _, e := range ents {
			assert.False(t, strings.HasPrefix(e.Name(), ".new-"), "no half-made session: %s", e.Name())
		}
		assert.Contains(t, ok(t, full, "ls"), "keep")
	}
}

// TestMountAsNormalUser: a normal user mounts through fusermount3 and uses the mount like root does.
func TestMountAsNormalUser(t *testing.T) {
	needFUSE(t)
	need(t, os.Geteuid() == 0, "switching users needs root")
	_, err := exec.LookPath("fusermount3")
	need(t, err == nil, "fusermount3 is missing (apt-get install fuse3)")
	fi, err := os.Stat("/dev/fuse")
	need(t, err == nil && fi.Mode().Perm()&0o006 == 0o006, "/dev/fuse is not open to normal users (chmod 0666 /dev/fuse, the distributions' default; .ci/run does)")
	base, err := os.MkdirTemp("/tmp", "sessionfs-user-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	store, mnt := filepath.Join(base, "store"), filepath.Join(base, "mnt")
	for _, d := range []string{base, store, mnt} {
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.Chown(d, 65534, 65534))
	}
	nobody := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
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
