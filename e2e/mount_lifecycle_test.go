package e2e

import (
	"bufio"
	"context"
	"fmt"
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

// TestSessionMadeByCLIAppearsLive: a session created with the CLI while mounted is listed within a second.
func TestSessionMadeByCLIAppearsLive(t *testing.T) {
	store := t.TempDir()
	m := mount(t, store)
	entries, err := os.ReadDir(filepath.Join(m.mnt, "sessions"))
	require.NoError(t, err)
	assert.Empty(t, entries)
	ok(t, store, "new", "late")
	start := time.Now()
	eventually(t, time.Second, func() bool {
		ents, _ := os.ReadDir(filepath.Join(m.mnt, "sessions"))
		return len(ents) == 1 && ents[0].Name() == "late"
	}, "the new session did not appear")
	t.Logf("appeared after %v", time.Since(start))
	assert.DirExists(t, filepath.Join(m.session("late"), "workspace"))

	// exec and show use the mounted path while the store is mounted.
	r := cli(t, store, "exec", "late", "--", "pwd")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, filepath.Join(m.session("late"), "workspace"), strings.TrimSpace(r.stdout))
	assert.Contains(t, ok(t, store, "show", "late"), "Mounted     "+m.session("late"))
}

// TestMountLifecycle: unmount by command, a stale mount of a killed daemon is cleared by the next mount, and bad
// mountpoints get one clear line.
func TestMountLifecycle(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)

	r := cli(t, store, "mount", m.mnt)
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "already mounted")

	// kill -9 leaves "transport endpoint is not connected"; the next mount clears it by itself.
	m.kill(t)
	var sfs syscall.Statfs_t
	require.ErrorIs(t, syscall.Statfs(m.mnt, &sfs), syscall.ENOTCONN, "a killed daemon leaves a stale mount")
	start := time.Now()
	m.start(t)
	t.Logf("remounted over a stale mount in %v", time.Since(start))
	assert.DirExists(t, filepath.Join(m.session("s1"), "workspace"))

	ok(t, store, "unmount", m.mnt)
	assert.False(t, isFUSEMount(m.mnt))
	r = cli(t, store, "unmount", m.mnt)
	assert.Contains(t, r.stderr, "not mounted")

	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	r = cli(t, store, "mount", file)
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "is not a folder")
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1)
}

// TestReadOnlyMount: --read-only refuses changes with EROFS and still serves reads.
func TestReadOnlyMount(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store, "--read-only")
	assert.DirExists(t, filepath.Join(m.session("s1"), "workspace"))
	err := os.WriteFile(filepath.Join(m.session("s1"), "workspace", "x"), nil, 0o644)
	assert.ErrorIs(t, err, syscall.EROFS)
	err = os.Mkdir(filepath.Join(m.mnt, "sessions", "new"), 0o755)
	assert.ErrorIs(t, err, syscall.EROFS)
}

// TestMountFUSEErrors: no /dev/fuse, or no permission to open it, gives one clear line each.
func TestMountFUSEErrors(t *testing.T) {
	need(t, os.Geteuid() == 0, "hiding /dev/fuse and switching users need root")
	_, err := exec.LookPath("unshare")
	need(t, err == nil, "unshare (util-linux) is missing")
	store := t.TempDir()
	mnt := filepath.Join(t.TempDir(), "mnt")
	// A private mount namespace whose /dev has no fuse device.
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c",
		`mount -t tmpfs none /dev && exec "$0" mount "$1"`, bin, mnt)
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	assert.Equal(t, "sessionfs: FUSE is not available: /dev/fuse is missing (load the fuse module; in a container, pass --device /dev/fuse)\n", string(out))

	fi, err := os.Stat("/dev/fuse")
	require.NoError(t, err)
	require.NoError(t, os.Chmod("/dev/fuse", 0o600))
	defer os.Chmod("/dev/fuse", fi.Mode().Perm())
	base, err := os.MkdirTemp("/tmp", "sessionfs-nofuse-")
	require.NoError(t, err)
	defer os.RemoveAll(base)
	require.NoError(t, os.Chown(base, 65534, 65534))
	cmd = exec.Command(bin, "mount", filepath.Join(base, "mnt"))
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+filepath.Join(base, "store"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err = cmd.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "no permission to open /dev/fuse")
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(string(out)), "\n")+1, "%s", out)
}

// TestInterruptBusyMount: Ctrl-C of a foreground mount a shell still uses says what it waits for (the process
// by pid and name) and keeps serving it; a second Ctrl-C stops at once.
func TestInterruptBusyMount(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	var extra []string
	if os.Geteuid() == 0 {
		require.NoError(t, os.Chmod(store, 0o755))
		extra = append(extra, "--allow-other")
	}
	m := mount(t, store, extra...)
	user := exec.Command("sleep", "60")
	user.Dir = filepath.Join(m.session("s1"), ".claude")
	require.NoError(t, user.Start())
	t.Cleanup(func() { _ = user.Process.Kill(); _ = user.Wait() })
	var other *exec.Cmd // another user's process: root's helper reads its /proc entries with SYS_PTRACE
	if os.Geteuid() == 0 {
		for d := filepath.Dir(m.mnt); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
			require.NoError(t, os.Chmod(d, 0o755)) // t.TempDir makes 0700 folders
		}
		other = exec.Command("sleep", "61")
		other.Dir = filepath.Join(m.mnt, "sessions")
		other.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		require.NoError(t, other.Start())
		t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	}
	require.NoError(t, m.cmd.Process.Signal(os.Interrupt))
	eventually(t, 10*time.Second, func() bool { return strings.Contains(m.log.String(), "is in use") },
		"the first interrupt says what it waits for: %s", m.log.String())
	assert.Contains(t, m.log.String(), fmt.Sprintf("%d sleep", user.Process.Pid))
	if other != nil {
		assert.Contains(t, m.log.String(), fmt.Sprintf("%d sleep", other.Process.Pid), "another user's process too")
	}
	assert.Contains(t, m.log.String(), "interrupt again to stop now")
	exited := make(chan struct{})
	go func() { _ = m.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
		t.Fatal("the daemon stopped serving a process still using the mount")
	case <-time.After(500 * time.Millisecond):
	}
	require.NoError(t, m.cmd.Process.Signal(os.Interrupt))
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("a second interrupt did not stop the daemon")
	}
}
