package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
