package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFolderListingsWithoutOpendir: the mount declines OPENDIR, so the kernel reads folders with no handle and
// keeps their listings; the daemon opens a handle per read and continues a listing read in several requests on
// it. Folders larger than one request, readers that stop part way, several readers at once, changes behind the
// mount, fsync of a folder and the sessions folder itself must all list exactly what the store holds.
func TestFolderListingsWithoutOpendir(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s000")
	m := mount(t, store)
	for i := 1; i < 300; i++ { // mkdir in the mount makes a session
		require.NoError(t, os.Mkdir(m.session(fmt.Sprintf("s%03d", i)), 0o755))
	}

	// A folder far larger than one READDIRPLUS reply (names of ~100 bytes: ~10,000 per MiB).
	big := filepath.Join(store, "sessions", "s000", "workspace", "big")
	require.NoError(t, os.Mkdir(big, 0o755))
	var want []string
	for i := range 5000 {
		name := fmt.Sprintf("%04d-%s", i, strings.Repeat("x", 90))
		want = append(want, name)
		require.NoError(t, os.WriteFile(filepath.Join(big, name), nil, 0o644))
	}
	through := filepath.Join(m.session("s000"), "workspace", "big")
	list := func(dir string) []string {
		t.Helper()
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return names
	}
	assert.Equal(t, want, list(through), "a listing read in many requests is whole")
	assert.Equal(t, want, list(through), "and the same from the kernel's cache")

	// A reader that stops part way leaves nothing that spoils the next listing.
	f, err := os.Open(through)
	require.NoError(t, err)
	part, err := f.Readdirnames(10)
	require.NoError(t, err)
	assert.Len(t, part, 10)
	require.NoError(t, f.Close())

	// A change behind the mount shows in the next listing (the watcher drops the cached one).
	require.NoError(t, os.Remove(filepath.Join(big, want[0])))
	require.NoError(t, os.WriteFile(filepath.Join(big, "9999-new"), nil, 0o644))
	changed := append(slices.Clone(want[1:]), "9999-new")
	eventually(t, 5*time.Second, func() bool { return slices.Equal(changed, list(through)) },
		"the listing follows the store")

	// Many readers at once, of a folder the kernel has to read again (each one changed through the mount).
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for r := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("reader-%d", r)
			if err := os.WriteFile(filepath.Join(through, name), nil, 0o644); err != nil {
				errs <- err
				return
			}
			ents, err := os.ReadDir(through)
			if err != nil {
				errs <- err
				return
			}
			seen := false
			for _, e := range ents {
				seen = seen || e.Name() == name
			}
			if !seen || len(ents) < len(changed) {
				errs <- fmt.Errorf("reader %d saw %d entries, its own file: %v", r, len(ents), seen)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}

	// fsync of a folder (what careful writers do after a rename) works without a handle from OPENDIR.
	d, err := os.Open(through)
	require.NoError(t, err)
	assert.NoError(t, d.Sync())
	require.NoError(t, d.Close())

	// The sessions folder, larger than one request too, lists every session once.
	sessions := list(filepath.Join(m.mnt, "sessions"))
	require.Len(t, sessions, 300)
	assert.Equal(t, "s000", sessions[0])
	assert.Equal(t, "s299", sessions[299])
	assert.Equal(t, sessions, list(filepath.Join(m.mnt, "sessions")))
	ok(t, store, "new", "s300")
	eventually(t, 5*time.Second, func() bool { return len(list(filepath.Join(m.mnt, "sessions"))) == 301 },
		"a new session shows in the listing")

	// Synthetic folders no watcher follows are listed anew each time: the projects views and by-claude-id.
	proj := filepath.Join(m.session("s000"), ".claude", "projects")
	assert.Equal(t, []string{"-session-workspace"}, list(proj))
	// The canonical folder removed behind the mount leaves the listing empty; made again, it shows.
	canon := filepath.Join(store, "sessions", "s000", ".claude", "projects", "-session-workspace")
	require.NoError(t, os.Remove(canon))
	eventually(t, 5*time.Second, func() bool { return len(list(proj)) == 0 }, "the projects listing follows the store: %v", list(proj))
	require.NoError(t, os.Mkdir(canon, 0o755))
	eventually(t, 5*time.Second, func() bool { return slices.Equal([]string{"-session-workspace"}, list(proj)) },
		"the projects listing shows the canonical folder again: %v", list(proj))
	byID := filepath.Join(m.mnt, "by-claude-id")
	assert.Empty(t, list(byID))
	uuid := "0b7c6a1e-1111-2222-3333-444455556666"
	line := `{"type":"user","sessionId":"` + uuid + `","message":{"role":"user","content":"hi"}}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "s001", ".claude", "projects", "-session-workspace", uuid+".jsonl"), []byte(line), 0o600))
	eventually(t, 5*time.Second, func() bool { return slices.Equal([]string{uuid}, list(byID)) },
		"by-claude-id lists a conversation made after its first listing: %v", list(byID))
}
