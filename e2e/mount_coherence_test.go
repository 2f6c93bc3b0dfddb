package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/layout"
)

// TestStoreChangesVisibleWithin100ms: the kernel caches names and attributes for long, yet a change made
// directly in the store (a new session, an edited file, a deleted file, a new file where a lookup failed
// before) shows through the mount within 100 ms, in every alias view.
func TestStoreChangesVisibleWithin100ms(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	st, err := layout.OpenStore(store)
	require.NoError(t, err)

	// Warm the kernel's caches: attributes, a name, a listing, and failed lookups (negative entries).
	viaMount := filepath.Join(m.session("s1"), "workspace", "notes.txt")
	inStore := filepath.Join(store, "sessions", "s1", "workspace", "notes.txt")
	require.NoError(t, os.WriteFile(inStore, []byte("one\n"), 0o644))
	fi, err := os.Stat(viaMount)
	require.NoError(t, err)
	require.Equal(t, int64(4), fi.Size())
	ents, err := os.ReadDir(filepath.Dir(viaMount))
	require.NoError(t, err)
	require.Len(t, ents, 1)
	require.True(t, missing(filepath.Join(m.mnt, "sessions", "later")))
	newFile := filepath.Join(m.session("s1"), "workspace", "new.txt")
	require.True(t, missing(newFile))
	aliasA := filepath.Join(m.session("s1"), ".claude", "projects", "-home-u-a", "t.jsonl")
	aliasB := filepath.Join(m.session("s1"), ".claude", "projects", "-other-cwd", "t.jsonl")
	require.True(t, missing(aliasA))
	require.True(t, missing(aliasB))

	// An edited file.
	require.NoError(t, os.WriteFile(inStore, []byte("one\ntwo\n"), 0o644))
	within100ms(t, "an edited file", func() bool {
		fi, err := os.Stat(viaMount)
		return err == nil && fi.Size() == 8
	})
	// A new file, where a lookup failed before.
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "s1", "workspace", "new.txt"), nil, 0o644))
	within100ms(t, "a new file", func() bool { return !missing(newFile) })
	within100ms(t, "a new file in a cached listing", func() bool {
		ents, err := os.ReadDir(filepath.Dir(newFile))
		return err == nil && len(ents) == 2
	})
	// A new transcript, in every alias view.
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace", "t.jsonl"), []byte("{}\n"), 0o600))
	within100ms(t, "a new transcript in two alias views", func() bool { return !missing(aliasA) && !missing(aliasB) })
	// A file made through one alias view appears in another view's cached listing.
	viewA, viewB := filepath.Dir(aliasA), filepath.Dir(aliasB)
	_, err = os.ReadDir(viewB)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(viewA, "via-a.jsonl"), nil, 0o600))
	within100ms(t, "a file made through another alias view", func() bool {
		ents, err := os.ReadDir(viewB)
		return err == nil && len(ents) == 2
	})
	// A file changed through the mount and at once behind it: what the mount did itself does not hide the other.
	require.NoError(t, os.Chmod(viaMount, 0o600))
	require.NoError(t, os.Chmod(inStore, 0o640))
	within100ms(t, "a chmod behind the mount right after one through it", func() bool {
		fi, err := os.Stat(viaMount)
		return err == nil && fi.Mode().Perm() == 0o640
	})
	// A deleted file.
	require.NoError(t, os.Remove(inStore))
	within100ms(t, "a deleted file", func() bool { return missing(viaMount) })
	// A new session, made by the store (as the CLI does) where a lookup failed before.
	_, err = st.Create("later", layout.CreateOptions{})
	require.NoError(t, err)
	within100ms(t, "a new session", func() bool { return !missing(filepath.Join(m.mnt, "sessions", "later", "workspace")) })
	// A removed session.
	_, err = st.Remove("later")
	require.NoError(t, err)
	within100ms(t, "a removed session", func() bool { return missing(filepath.Join(m.mnt, "sessions", "later")) })
}

// TestStoreNamesCachedForLongWhileWatched: the kernel is told to keep the store's names and attributes for an
// hour (a walk a minute later costs no LOOKUP), since the watcher shows changes at once; names found missing
// keep the mount's 30 s, and a timeout the user sets holds for everything.
func TestStoreNamesCachedForLongWhileWatched(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "s1", "workspace", "notes.txt"), []byte("one\n"), 0o644))

	replies := func(m *mounted, name string) string {
		_, err := os.Stat(filepath.Join(m.session("s1"), "workspace", name))
		require.Equal(t, name == "notes.txt", err == nil, "%s: %v", name, err)
		var reply string
		eventually(t, 2*time.Second, func() bool {
			// The debug log: "rx 24: LOOKUP n5  \"notes.txt\" ..." and then "tx 24:     OK, {n6 g1 tE=3600s tA=3600s ...".
			lines := strings.Split(m.log.String(), "\n")
			for i, l := range lines {
				if strings.Contains(l, `LOOKUP`) && strings.Contains(l, `"`+name+`"`) {
					rx := strings.Fields(l[strings.Index(l, "rx "):])[1]
					for _, r := range lines[i+1:] {
						if strings.Contains(r, "tx "+rx) {
							reply = r
							return true
						}
					}
				}
			}
			return false
		}, "no LOOKUP of %s in the debug log", name)
		return reply
	}
	// The workspace through FUSE (--max-binds 0): as root it is a bind of the store's folder, which the kernel serves.
	m := mount(t, store, "--debug", "--max-binds", "0")
	assert.Contains(t, replies(m, "notes.txt"), "tE=3600s tA=3600s", "a watched store file")
	assert.Contains(t, replies(m, "missing.txt"), "tE=30s", "a name found missing")
	m.stop(t)

	m = mount(t, store, "--debug", "--cache-timeout", "5s", "--max-binds", "0")
	assert.Contains(t, replies(m, "notes.txt"), "tE=5s tA=5s", "the user's timeout")
}

// Finding 8: a file appended behind the mount while a writer holds it open shows its new size through the mount
// at once, not after the attribute timeout.
func TestSizeFreshWhileOpenForWriting(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	viaMount := filepath.Join(m.session("s1"), "workspace", "log")
	f, err := os.OpenFile(viaMount, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteString("mount\n")
	require.NoError(t, err)
	fi, err := os.Stat(viaMount)
	require.NoError(t, err)
	require.Equal(t, int64(6), fi.Size())

	inStore, err := os.OpenFile(filepath.Join(store, "sessions", "s1", "workspace", "log"), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = inStore.WriteString("behind the mount\n")
	require.NoError(t, err)
	require.NoError(t, inStore.Close())
	within100ms(t, "the size of a file open for writing", func() bool {
		fi, err := os.Stat(viaMount)
		return err == nil && fi.Size() == 6+17
	})
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
