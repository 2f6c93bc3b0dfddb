package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

// TestParallelSessionsCreateRemove: sessions made and removed in parallel with mkdir / rm -rf through the mount
// and with the CLI leave a consistent store.
func TestParallelSessionsCreateRemove(t *testing.T) {
	store := t.TempDir()
	m := mount(t, store)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				dir := filepath.Join(m.mnt, "sessions", fmt.Sprintf("mk-%d-%d", g, i))
				if err := os.Mkdir(dir, 0o755); err != nil {
					errs <- err
					return
				}
				if err := os.WriteFile(filepath.Join(dir, "workspace", "f"), []byte("x"), 0o644); err != nil {
					errs <- err
					return
				}
				if err := os.RemoveAll(dir); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				id := fmt.Sprintf("cli-%d-%d", g, i)
				if r := cli(t, store, "new", id); r.code != 0 {
					errs <- fmt.Errorf("new %s: %s", id, r.stderr)
					return
				}
				if r := cli(t, store, "rm", id); r.code != 0 {
					errs <- fmt.Errorf("rm %s: %s", id, r.stderr)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	ents, err := os.ReadDir(filepath.Join(m.mnt, "sessions"))
	require.NoError(t, err)
	assert.Empty(t, ents, "every session was removed")
	assert.Len(t, trashedSessions(t, store), 8*10+8*5, "every removed session waits in the trash")
	assert.Equal(t, "ID  CREATED  LAST ACTIVE  SIZE  CONVERSATIONS  STATUS  LABELS\n", ok(t, store, "ls"))
}
