package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/layout"
)

// Defects a new user tripped over (the everyday-use issue), each as the user met it.

// A mountpoint inside the store, a store inside the mountpoint, a store mounted twice and a mountpoint that
// holds files are refused with one line each, and nothing is mounted.
func TestMountPlacesRefused(t *testing.T) {
	needFUSE(t)
	store := t.TempDir()
	ok(t, store, "new", "j1")
	inside := filepath.Join(store, "sessions", "j1", "workspace", "loop")
	r := cli(t, store, "mount", inside)
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "is inside the store")
	assert.False(t, isFUSEMount(inside))

	outer := t.TempDir()
	r = cliWith(t, filepath.Join(outer, "store"), "", nil, nil, "mount", outer)
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Contains(t, r.stderr, "is inside the mountpoint")

	m := mount(t, store)
	second := filepath.Join(t.TempDir(), "again")
	r = cli(t, store, "mount", second)
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "already mounted at "+m.mnt)
	assert.False(t, isFUSEMount(second))

	full := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(full, "mine.txt"), []byte("keep"), 0o644))
	m.stop(t)
	r = cli(t, store, "mount", full)
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "is not empty")
	assert.FileExists(t, filepath.Join(full, "mine.txt"))
}

// unmount touches only sessionfs mounts.
func TestUnmountOnlyOurs(t *testing.T) {
	need(t, os.Geteuid() == 0, "mounting a tmpfs needs root")
	dir := t.TempDir()
	require.NoError(t, exec.Command("mount", "-t", "tmpfs", "tmpfs", dir).Run())
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	r := cli(t, t.TempDir(), "unmount", dir)
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "is a tmpfs mount, not a sessionfs one")
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	assert.Contains(t, string(b), " "+dir+" ", "the tmpfs is still mounted")

	// A busy sessionfs mount is detached lazily, and the user is told.
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	busy := exec.Command("sleep", "30")
	busy.Dir = filepath.Join(m.session("s1"), ".claude")
	require.NoError(t, busy.Start())
	t.Cleanup(func() { _ = busy.Process.Kill(); _ = busy.Wait() })
	r = cli(t, store, "unmount", m.mnt)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "detached lazily")
	assert.False(t, isFUSEMount(m.mnt))
}

// rmdir of a session that holds anything is ENOTEMPTY, as for any folder; rm -rf still removes it (whole, to
// the trash: TestRmRfSessionRecoverable).
func TestRmdirOfASession(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	err := syscall.Rmdir(m.session("s1"))
	assert.ErrorIs(t, err, syscall.ENOTEMPTY)
	assert.DirExists(t, filepath.Join(store, "sessions", "s1", "workspace"), "nothing was removed")
	require.NoError(t, os.RemoveAll(m.session("s1")))
	assert.NoDirExists(t, filepath.Join(store, "sessions", "s1"))
}

// Defect 17: an alias is recorded in session.json when something is written through it (a file created, renamed
// or removed there, a transcript opened for writing after being looked up there), never when it is only looked
// at: listing, stat, reading.
func TestAliasesRecordedWhenWritten(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	const uuid = "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01"
	canonical := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
	require.NoError(t, os.WriteFile(filepath.Join(canonical, uuid+".jsonl"), []byte("{}\n"), 0o600))
	m := mount(t, store)
	projects := filepath.Join(m.session("s1"), ".claude", "projects")
	aliases := func() []string {
		var meta layout.Meta
		raw, err := os.ReadFile(filepath.Join(store, "sessions", "s1", "session.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &meta))
		return meta.Aliases
	}

	sh(t, projects, "ls -la -- -looked; ls -- -looked/; stat -- -looked/"+uuid+".jsonl; cat -- -read/"+uuid+".jsonl; ls -d -- -x -y")
	time.Sleep(200 * time.Millisecond)
	assert.Empty(t, aliases(), "looking records nothing")

	sh(t, projects, "echo '{}' >> -appended/"+uuid+".jsonl; touch -- -created/new.jsonl; mkdir -- -mkdir/"+uuid)
	eventually(t, 5*time.Second, func() bool { return len(aliases()) == 3 }, "three aliases written through: %v", aliases())
	assert.ElementsMatch(t, []string{"-appended", "-created", "-mkdir"}, aliases())
	assert.Equal(t, 2, lineCount(t, filepath.Join(canonical, uuid+".jsonl")))
}

// A store whose mount's daemon died is reported as stale, with the way out, not as "not mounted".
func TestStaleMountReported(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	m.kill(t)
	require.True(t, staleMount(m.mnt))
	r := cli(t, store, "exec", "s1", "--", "true")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "the store's mount at "+m.mnt+" is stale (its daemon is gone; sessionfs mount serves it again)")
	assert.NotContains(t, r.stderr, "not mounted")
}

// A read-only mount stays read-only for runs: exec's (and run's) binds of the store's folders were writable, so
// a run wrote to the store through them.
func TestReadOnlyMountReadOnlyRuns(t *testing.T) {
	need(t, os.Geteuid() == 0, "the root path of exec's binds; TestMountAsNormalUser covers users")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	mount(t, store, "--read-only")
	r := cli(t, store, "exec", "s1", "--", "sh", "-c", "echo x > written.txt")
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "Read-only file system")
	assert.NoFileExists(t, filepath.Join(store, "sessions", "s1", "workspace", "written.txt"))
}

// The same for run --backend docker, whose binds of the store's folders were writable too.
func TestReadOnlyMountReadOnlyContainers(t *testing.T) {
	images(t, needDocker(t), "")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	mount(t, store, "--read-only")
	r := inContainer(t, store, "s1", "echo x > /session/workspace/in-container.txt")
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "Read-only file system")
	assert.NoFileExists(t, filepath.Join(store, "sessions", "s1", "workspace", "in-container.txt"))
}
