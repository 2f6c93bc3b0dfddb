package layout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// These tests attack the store as a session would: everything inside a session folder is the session's to
// write, so any name may be a symlink out of it, a FIFO, a device or a huge file.

// outside is a folder outside the store holding a file a session would like us to read, move or overwrite.
func outside(t *testing.T) (dir, file string) {
	t.Helper()
	dir = t.TempDir()
	file = filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(file, []byte(`{"id":"secret","labels":{"k":"v"}}`), 0o600))
	return dir, file
}

// assertUntouched checks dir holds exactly the names given, and file still has its content.
func assertUntouched(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	assert.ElementsMatch(t, names, got, "the folder outside the store was changed")
}

// promptly fails the test if fn takes longer than a few seconds (a read blocked on a FIFO, say).
func promptly(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("blocked")
	}
}

func create(t *testing.T, s *Store, ids ...string) {
	t.Helper()
	for _, id := range ids {
		_, err := s.Create(id, CreateOptions{})
		require.NoError(t, err)
	}
}

func TestOpenSession(t *testing.T) {
	s := newStore(t)
	create(t, s, "ok")
	out, _ := outside(t)
	require.NoError(t, os.Symlink(out, s.Dir("link")))
	require.NoError(t, os.WriteFile(s.Dir("file"), nil, 0o644))
	for _, tc := range []struct {
		id   string
		kind error
	}{
		{"ok", nil},
		{"absent", ErrNotFound},
		{"link", ErrNotFound},
		{"file", ErrNotFound},
		{"../x", ErrInvalidID},
		{"", ErrInvalidID},
	} {
		t.Run(tc.id, func(t *testing.T) {
			d, err := s.OpenSession(tc.id)
			if tc.kind == nil {
				require.NoError(t, err)
				assert.NoError(t, d.Close())
				return
			}
			assert.ErrorIs(t, err, tc.kind)
			assert.Nil(t, d)
		})
	}
	// Nothing acts on a symlinked session folder.
	_, err := s.Get("link")
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = s.Adopt("link")
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = s.Update("link", func(m *Meta) error { return nil })
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = s.Fold("link")
	assert.ErrorIs(t, err, ErrNotFound)
	assert.False(t, s.Exists("link"))
	assert.Error(t, s.TrashTranscript("link", "x.jsonl", time.Now()))
	ids, err := s.IDs()
	require.NoError(t, err)
	assert.Equal(t, []string{"ok"}, ids)
	assertUntouched(t, out, "secret")
}

func TestHostileSessionJSONIsDamaged(t *testing.T) {
	out, secret := outside(t)
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, meta string)
	}{
		{"symlink to a file outside", func(t *testing.T, meta string) { require.NoError(t, os.Symlink(secret, meta)) }},
		{"dangling symlink", func(t *testing.T, meta string) { require.NoError(t, os.Symlink("/nonexistent", meta)) }},
		{"fifo", func(t *testing.T, meta string) { require.NoError(t, unix.Mkfifo(meta, 0o644)) }},
		{"folder", func(t *testing.T, meta string) { require.NoError(t, os.Mkdir(meta, 0o755)) }},
		{"huge sparse file", func(t *testing.T, meta string) {
			f, err := os.Create(meta)
			require.NoError(t, err)
			require.NoError(t, f.Truncate(1<<40))
			require.NoError(t, f.Close())
		}},
		{"just over the limit", func(t *testing.T, meta string) {
			require.NoError(t, os.WriteFile(meta, []byte(`{"id":"x","cwds":["`+strings.Repeat("a", MaxMetaSize)+`"]}`), 0o644))
		}},
		{"device", func(t *testing.T, meta string) {
			if os.Getuid() != 0 {
				t.Skip("mknod needs root")
			}
			require.NoError(t, unix.Mknod(meta, unix.S_IFCHR|0o644, int(unix.Mkdev(1, 5)))) // /dev/zero: endless
		}},
		{"not json", func(t *testing.T, meta string) { require.NoError(t, os.WriteFile(meta, []byte("{nope"), 0o644)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			create(t, s, "s")
			meta := filepath.Join(s.Dir("s"), MetaFile)
			require.NoError(t, os.Remove(meta))
			tc.plant(t, meta)
			promptly(t, func() {
				_, err := s.Get("s")
				assert.ErrorIs(t, err, ErrDamaged)
				_, err = s.Update("s", func(m *Meta) error { m.AddAlias("-x"); return nil })
				assert.ErrorIs(t, err, ErrDamaged)
				infos, err := s.List()
				require.NoError(t, err)
				require.Len(t, infos, 1)
				assert.Equal(t, "s", infos[0].ID)
				assert.Contains(t, infos[0].Damaged, "damaged")
				assert.Empty(t, infos[0].Labels, "nothing read through a link")
			})
			// Adopt repairs it by replacing the name, never writing through it (a folder it cannot replace).
			m, err := s.Adopt("s")
			if tc.name == "folder" {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "s", m.ID)
			_, err = s.Get("s")
			assert.NoError(t, err)
			b, err := os.ReadFile(secret)
			require.NoError(t, err)
			assert.Contains(t, string(b), `"secret"`, "the file outside is unchanged")
			assertUntouched(t, out, "secret")
		})
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

func TestSessionIdentityIsItsFolderName(t *testing.T) {
	s := newStore(t)
	create(t, s, "victim", "evil", "dots")
	writeJSON(t, filepath.Join(s.Dir("evil"), MetaFile), map[string]any{"id": "victim", "created": time.Now()})
	writeJSON(t, filepath.Join(s.Dir("dots"), MetaFile), map[string]any{"id": "../../x", "created": time.Now()})

	for _, id := range []string{"victim", "evil", "dots"} {
		m, err := s.Get(id)
		require.NoError(t, err)
		assert.Equal(t, id, m.ID)
		m, err = s.Update(id, func(m *Meta) error { m.ID = "victim"; return nil })
		require.NoError(t, err)
		assert.Equal(t, id, m.ID, "Update keeps the folder's name")
	}
	infos, err := s.List()
	require.NoError(t, err)
	var ids []string
	for _, in := range infos {
		ids = append(ids, in.ID)
	}
	assert.Equal(t, []string{"dots", "evil", "victim"}, ids, "each session once, under its folder's name")

	// gc --idle trashes the idle session, never the one it claims to be.
	old := time.Now().Add(-48 * time.Hour)
	require.NoError(t, filepath.Walk(s.Dir("evil"), func(p string, _ os.FileInfo, _ error) error {
		return os.Chtimes(p, old, old)
	}))
	writeJSON(t, filepath.Join(s.Dir("evil"), MetaFile), map[string]any{"id": "victim"})
	require.NoError(t, os.Chtimes(filepath.Join(s.Dir("evil"), MetaFile), old, old))
	require.NoError(t, os.Chtimes(s.Dir("evil"), old, old))
	require.NoError(t, s.GC(GCOptions{IdleFor: 24 * time.Hour}))
	assert.True(t, s.Exists("victim"))
	assert.True(t, s.Exists("dots"))
	assert.False(t, s.Exists("evil"))
}

func TestSessionJSONIsSanitised(t *testing.T) {
	s := newStore(t)
	create(t, s, "s")
	var many []string
	for i := range MaxAliases + 50 {
		many = append(many, fmt.Sprintf("-a%d", i))
	}
	runs := make([]Run, MaxRuns+5)
	for i := range runs {
		runs[i].Backend = strconv.Itoa(i)
	}
	writeJSON(t, filepath.Join(s.Dir("s"), MetaFile), map[string]any{
		"id": "s",
		"aliases": append([]string{"../../etc", "a/b", "..", ".", "", "nul\x00x", strings.Repeat("x", 256), "-ok", "-ok",
			CanonicalProject}, many...),
		"cwds": []string{"/w", "", "/w", "a\x00b", strings.Repeat("/x", 3000)},
		"runs": runs,
	})
	m, err := s.Get("s")
	require.NoError(t, err)
	assert.Len(t, m.Aliases, MaxAliases)
	assert.Equal(t, "-ok", m.Aliases[0])
	for _, a := range m.Aliases {
		assert.True(t, ValidAlias(a), a)
		assert.NotEqual(t, CanonicalProject, a)
	}
	assert.Equal(t, []string{"/w"}, m.Cwds)
	require.Len(t, m.Runs, MaxRuns)
	assert.Equal(t, strconv.Itoa(MaxRuns+4), m.Runs[MaxRuns-1].Backend, "the newest runs are kept")

	for _, tc := range []struct {
		name string
		ok   bool
	}{{"-home-u-x", true}, {"x.y_z", true}, {"a/b", false}, {"..", false}, {".", false}, {"", false}, {"a\x00", false}, {strings.Repeat("a", 255), true}, {strings.Repeat("a", 256), false}} {
		assert.Equal(t, tc.ok, ValidAlias(tc.name), "%q", tc.name)
	}
}

func TestMetaKeepsTheSessionOwner(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("chown needs root")
	}
	s := newStore(t)
	require.NoError(t, os.MkdirAll(s.Dir("u"), 0o755))
	require.NoError(t, os.Chown(s.Dir("u"), 1234, 5678))
	_, err := s.Adopt("u")
	require.NoError(t, err)
	_, err = s.Update("u", func(m *Meta) error { m.AddAlias("-x"); return nil })
	require.NoError(t, err)
	for _, rel := range []string{MetaFile, AppDir, WorkspaceDir, MCPDir, ClaudeDir, ProjectsDir, ProjectsDir + "/" + CanonicalProject} {
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(filepath.Join(s.Dir("u"), rel), &st), rel)
		assert.Equal(t, [2]uint32{1234, 5678}, [2]uint32{st.Uid, st.Gid}, rel)
	}
	// Fold and restore make folders as the session's owner too.
	stray := filepath.Join(s.Dir("u"), ProjectsDir, "-stray")
	require.NoError(t, os.MkdirAll(filepath.Join(stray, "u1", "sub"), 0o755))
	require.NoError(t, os.RemoveAll(filepath.Join(s.Dir("u"), ProjectsDir, CanonicalProject)))
	_, err = s.Fold("u")
	require.NoError(t, err)
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(filepath.Join(s.Dir("u"), ProjectsDir, CanonicalProject), &st))
	assert.Equal(t, uint32(1234), st.Uid)
}

// TestHelperUpdater is run in child processes by TestUpdateAcrossProcesses.
func TestHelperUpdater(t *testing.T) {
	root := os.Getenv("LAYOUT_TEST_UPDATER_ROOT")
	if root == "" {
		t.Skip("run by TestUpdateAcrossProcesses")
	}
	s, err := OpenStore(root)
	require.NoError(t, err)
	defer s.Close()
	w := os.Getenv("LAYOUT_TEST_UPDATER_N")
	for i := range 20 {
		_, err := s.Update("s", func(m *Meta) error {
			m.AddAlias(fmt.Sprintf("-w%s-%d", w, i))
			return nil
		})
		require.NoError(t, err)
	}
}

func TestUpdateAcrossProcesses(t *testing.T) {
	s := newStore(t)
	create(t, s, "s")
	var wg sync.WaitGroup
	errs := make([]error, 8)
	outs := make([][]byte, 8)
	for w := range 8 {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperUpdater$", "-test.count=1")
			cmd.Env = append(os.Environ(), "LAYOUT_TEST_UPDATER_ROOT="+s.Root, "LAYOUT_TEST_UPDATER_N="+strconv.Itoa(w))
			outs[w], errs[w] = cmd.CombinedOutput()
		})
	}
	wg.Wait()
	for w := range 8 {
		require.NoError(t, errs[w], "%s", outs[w])
	}
	m, err := s.Get("s")
	require.NoError(t, err)
	assert.Len(t, m.Aliases, 160, "no update lost")
	assert.FileExists(t, filepath.Join(s.Root, "locks", "s.lock"), "the lock lives outside the session")
}

func TestUpdateAcrossStores(t *testing.T) {
	s := newStore(t)
	create(t, s, "s")
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			st, err := OpenStore(s.Root) // its own descriptors: only flock keeps it in line
			if !assert.NoError(t, err) {
				return
			}
			defer st.Close()
			for i := range 20 {
				_, err := st.Update("s", func(m *Meta) error { m.AddAlias(fmt.Sprintf("-w%d-%d", w, i)); return nil })
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	m, err := s.Get("s")
	require.NoError(t, err)
	assert.Len(t, m.Aliases, 160, "no update lost")
}

func TestUpdateIgnoresALockInsideTheSession(t *testing.T) {
	s := newStore(t)
	create(t, s, "s")
	// A session holding a lock on a file of its own has no effect on Update.
	f, err := os.Create(filepath.Join(s.Dir("s"), "s.lock"))
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, unix.Flock(int(f.Fd()), unix.LOCK_EX))
	promptly(t, func() {
		_, err := s.Update("s", func(m *Meta) error { return nil })
		assert.NoError(t, err)
	})
}

func TestAdoptFollowsNoSymlink(t *testing.T) {
	for _, name := range []string{AppDir, WorkspaceDir, ClaudeDir} {
		t.Run(name, func(t *testing.T) {
			s := newStore(t)
			out, _ := outside(t)
			require.NoError(t, os.MkdirAll(s.Dir("s"), 0o755))
			require.NoError(t, os.Symlink(out, filepath.Join(s.Dir("s"), name)))
			_, err := s.Adopt("s")
			assert.Error(t, err)
			assertUntouched(t, out, "secret")
		})
	}
	t.Run("meta symlink", func(t *testing.T) {
		s := newStore(t)
		out, secret := outside(t)
		require.NoError(t, os.MkdirAll(s.Dir("s"), 0o755))
		require.NoError(t, os.Symlink(secret, filepath.Join(s.Dir("s"), MetaFile)))
		m, err := s.Adopt("s")
		require.NoError(t, err)
		assert.Empty(t, m.Labels, "the file outside was not read")
		fi, err := os.Lstat(filepath.Join(s.Dir("s"), MetaFile))
		require.NoError(t, err)
		assert.True(t, fi.Mode().IsRegular(), "the link was replaced")
		assertUntouched(t, out, "secret")
		b, _ := os.ReadFile(secret)
		assert.Contains(t, string(b), "secret")
	})
}

func TestFoldFollowsNoSymlink(t *testing.T) {
	setup := func(t *testing.T) (*Store, string, string) {
		s := newStore(t)
		create(t, s, "s")
		stray := filepath.Join(s.Dir("s"), ProjectsDir, "-stray")
		require.NoError(t, os.MkdirAll(stray, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(stray, "u1.jsonl"), []byte("a"), 0o600))
		return s, stray, filepath.Join(s.Dir("s"), ProjectsDir, CanonicalProject)
	}
	t.Run("canonical folder is a symlink", func(t *testing.T) {
		s, stray, canonical := setup(t)
		out, _ := outside(t)
		require.NoError(t, os.Remove(canonical))
		require.NoError(t, os.Symlink(out, canonical))
		_, err := s.Fold("s")
		assert.Error(t, err)
		_, err = FoldProjects(s.Dir("s"))
		assert.Error(t, err)
		assertUntouched(t, out, "secret")
		assert.FileExists(t, filepath.Join(stray, "u1.jsonl"), "nothing moved")
	})
	t.Run("projects folder is a symlink", func(t *testing.T) {
		s, _, _ := setup(t)
		out, _ := outside(t)
		require.NoError(t, os.Mkdir(filepath.Join(out, "-other"), 0o755))
		projects := filepath.Join(s.Dir("s"), ProjectsDir)
		require.NoError(t, os.RemoveAll(projects))
		require.NoError(t, os.Symlink(out, projects))
		_, err := s.Fold("s")
		assert.Error(t, err)
		assertUntouched(t, out, "secret", "-other")
	})
	t.Run("entries are moved as links", func(t *testing.T) {
		s, stray, canonical := setup(t)
		out, secret := outside(t)
		require.NoError(t, os.Symlink(secret, filepath.Join(stray, "link.jsonl")))
		require.NoError(t, os.Symlink(out, filepath.Join(stray, "dirlink")))
		require.NoError(t, os.Symlink(out, filepath.Join(s.Dir("s"), ProjectsDir, "-linked-project")))
		folded, err := s.Fold("s")
		require.NoError(t, err)
		assert.Equal(t, []string{"-stray"}, folded, "a symlinked project folder is not folded")
		target, err := os.Readlink(filepath.Join(canonical, "link.jsonl"))
		require.NoError(t, err)
		assert.Equal(t, secret, target)
		target, err = os.Readlink(filepath.Join(canonical, "dirlink"))
		require.NoError(t, err)
		assert.Equal(t, out, target)
		assert.FileExists(t, filepath.Join(canonical, "u1.jsonl"))
		assertUntouched(t, out, "secret")
	})
	t.Run("a link in the canonical folder where a folder merges", func(t *testing.T) {
		s, stray, canonical := setup(t)
		out, _ := outside(t)
		require.NoError(t, os.MkdirAll(filepath.Join(stray, "u1", "subagents"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(stray, "u1", "subagents", "a.jsonl"), []byte("x"), 0o600))
		require.NoError(t, os.Symlink(out, filepath.Join(canonical, "u1")))
		_, err := s.Fold("s")
		require.NoError(t, err)
		assertUntouched(t, out, "secret")
		assert.FileExists(t, filepath.Join(canonical, "u1.sessionfs-conflict-fold", "subagents", "a.jsonl"))
	})
	t.Run("conflicts keep every copy", func(t *testing.T) {
		s, _, canonical := setup(t)
		require.NoError(t, os.WriteFile(filepath.Join(canonical, "u1.jsonl"), []byte("ours"), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(canonical, "u1.jsonl.sessionfs-conflict-fold"), []byte("older"), 0o600))
		_, err := s.Fold("s")
		require.NoError(t, err)
		b, _ := os.ReadFile(filepath.Join(canonical, "u1.jsonl.sessionfs-conflict-fold-2"))
		assert.Equal(t, "a", string(b))
	})
}

func TestTranscriptTrashRoundTrip(t *testing.T) {
	s := newStore(t)
	create(t, s, "s")
	canonical := filepath.Join(s.Dir("s"), ProjectsDir, CanonicalProject)
	require.NoError(t, os.MkdirAll(filepath.Join(canonical, "u1", "subagents"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(canonical, "u1.jsonl"), []byte("one"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(canonical, "u1", "subagents", "a.jsonl"), []byte("agent"), 0o600))
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	require.NoError(t, s.TrashTranscript("s", "u1.jsonl", now))
	require.NoError(t, s.TrashTranscript("s", "u1/subagents/a.jsonl", now))
	// The same name again within the second: a second batch, nothing replaced.
	require.NoError(t, os.WriteFile(filepath.Join(canonical, "u1.jsonl"), []byte("two"), 0o600))
	require.NoError(t, s.TrashTranscript("s", "u1.jsonl", now))
	assert.NoFileExists(t, filepath.Join(canonical, "u1.jsonl"))

	list, err := s.TrashedTranscripts("s")
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, TrashedTranscript{UUID: "u1", Removed: now, Size: 3, Batch: "20260102T030405Z-1", Files: 1}, list[0])
	assert.Equal(t, TrashedTranscript{UUID: "u1", Removed: now, Size: 8, Batch: "20260102T030405Z", Files: 2}, list[1])

	restored, err := s.RestoreTranscript("s", "u1")
	require.NoError(t, err)
	assert.Equal(t, []string{"u1.jsonl"}, restored)
	b, _ := os.ReadFile(filepath.Join(canonical, "u1.jsonl"))
	assert.Equal(t, "two", string(b), "the newest copy comes back first")
	_, err = s.RestoreTranscript("s", "u1")
	assert.ErrorIs(t, err, os.ErrExist, "nothing present is overwritten")

	for _, bad := range []string{"", ".", "..", "../x", "/etc/passwd", "a/../../x", "a//b", "a\x00b"} {
		assert.ErrorIs(t, s.TrashTranscript("s", bad, now), ErrOutside, "%q", bad)
	}
	_, err = s.RestoreTranscript("s", "../x")
	assert.ErrorIs(t, err, ErrOutside)
	_, err = s.RestoreTranscript("s", "nope")
	assert.Error(t, err)
}

func TestTranscriptTrashFollowsNoSymlink(t *testing.T) {
	s := newStore(t)
	create(t, s, "s")
	out, secret := outside(t)
	canonical := filepath.Join(s.Dir("s"), ProjectsDir, CanonicalProject)
	require.NoError(t, os.Symlink(out, filepath.Join(canonical, "dir")))
	require.NoError(t, os.Symlink(secret, filepath.Join(canonical, "link.jsonl")))
	now := time.Now()

	// A path through a symlink is refused; a symlink itself is moved as a link.
	assert.Error(t, s.TrashTranscript("s", "dir/secret", now))
	require.NoError(t, s.TrashTranscript("s", "link.jsonl", now))
	assertUntouched(t, out, "secret")
	list, err := s.TrashedTranscripts("s")
	require.NoError(t, err)
	require.Len(t, list, 1)

	// A canonical folder swapped for a link out: restore writes nothing there.
	require.NoError(t, os.RemoveAll(canonical))
	require.NoError(t, os.Symlink(out, canonical))
	_, err = s.RestoreTranscript("s", "link")
	assert.Error(t, err)
	assert.Error(t, s.TrashTranscript("s", "secret", now))
	assertUntouched(t, out, "secret")
	b, _ := os.ReadFile(secret)
	assert.Contains(t, string(b), "secret")
}

// fillInodes makes files in dir until the filesystem has no inode left.
func fillInodes(t *testing.T, dir string) {
	t.Helper()
	for i := 0; ; i++ {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("fill-%d", i)))
		if err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC)
			return
		}
		f.Close()
		require.Less(t, i, 100000)
	}
}

func TestTrashTranscriptOnAFullDisk(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	root := t.TempDir()
	if err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k,nr_inodes=64", "tmpfs", root).Run(); err != nil {
		t.Skipf("cannot mount tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = exec.Command("umount", root).Run() })
	s, err := OpenStore(root)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	create(t, s, "s")
	canonical := filepath.Join(s.Dir("s"), ProjectsDir, CanonicalProject)
	require.NoError(t, os.MkdirAll(filepath.Join(canonical, "u1", "subagents"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(canonical, "u1.jsonl"), []byte("one"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(canonical, "u1", "subagents", "a~b%c.jsonl"), []byte("agent"), 0o600))
	fill := filepath.Join(root, "fill")
	require.NoError(t, os.Mkdir(fill, 0o755))
	fillInodes(t, fill)
	require.ErrorIs(t, os.Mkdir(filepath.Join(root, "x"), 0o755), syscall.ENOSPC, "the disk is full")

	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	require.NoError(t, s.TrashTranscript("s", "u1.jsonl", now), "removal works on a full disk")
	require.NoError(t, s.TrashTranscript("s", "u1/subagents/a~b%c.jsonl", now))
	assert.NoFileExists(t, filepath.Join(canonical, "u1.jsonl"))
	assert.FileExists(t, filepath.Join(s.TrashDir(), "transcripts", "s~20260102T030405Z~u1%2Fsubagents%2Fa%7Eb%25c.jsonl"),
		"with no folder to be made, the file waits flat in the transcripts folder")
	list, err := s.TrashedTranscripts("s")
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, TrashedTranscript{UUID: "u1", Removed: now, Size: 8, Batch: "20260102T030405Z", Files: 2}, list[0])

	require.NoError(t, os.RemoveAll(fill))
	restored, err := s.RestoreTranscript("s", "u1")
	require.NoError(t, err)
	slices.Sort(restored)
	assert.Equal(t, []string{"u1.jsonl", "u1/subagents/a~b%c.jsonl"}, restored)
	b, _ := os.ReadFile(filepath.Join(canonical, "u1", "subagents", "a~b%c.jsonl"))
	assert.Equal(t, "agent", string(b))
	list, err = s.TrashedTranscripts("s")
	require.NoError(t, err)
	assert.Empty(t, list)
}

func TestUsageStaysOnItsFilesystem(t *testing.T) {
	s := newStore(t)
	create(t, s, "s")
	ws := filepath.Join(s.Dir("s"), WorkspaceDir)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "own"), make([]byte, 64<<10), 0o644))
	base, _ := Usage(s.Dir("s"))
	assert.GreaterOrEqual(t, base, int64(64<<10))

	// A symlink to a big folder outside is not followed.
	big := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(big, "big"), make([]byte, 4<<20), 0o644))
	require.NoError(t, os.Symlink(big, filepath.Join(ws, "link")))
	size, _ := Usage(s.Dir("s"))
	assert.Less(t, size, base+(1<<20))

	if os.Getuid() != 0 {
		return
	}
	for _, tc := range []struct {
		name string
		args func(dst string) []string
	}{
		{"tmpfs", func(dst string) []string { return []string{"-t", "tmpfs", "-o", "size=16m", "tmpfs", dst} }},
		{"bind mount of the same filesystem", func(dst string) []string { return []string{"--bind", big, dst} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mnt := filepath.Join(ws, "mnt")
			require.NoError(t, os.Mkdir(mnt, 0o755))
			defer os.Remove(mnt)
			if out, err := exec.Command("mount", tc.args(mnt)...).CombinedOutput(); err != nil {
				t.Skipf("mount: %v %s", err, out)
			}
			defer exec.Command("umount", mnt).Run()
			require.NoError(t, os.WriteFile(filepath.Join(mnt, "big2"), make([]byte, 4<<20), 0o644))
			defer os.Remove(filepath.Join(mnt, "big2"))
			size, _ := Usage(s.Dir("s"))
			assert.Less(t, size, base+(1<<20), "a mount inside the session is not walked")
			info := s.Describe("s")
			assert.Less(t, info.Size, base+(1<<20))
		})
	}
}

func TestRemoveMovesTheEntryNotItsTarget(t *testing.T) {
	s := newStore(t)
	create(t, s, "s")
	out, _ := outside(t)
	require.NoError(t, os.Symlink(out, s.Dir("link")))
	trashed, err := s.Remove("link")
	require.NoError(t, err)
	fi, err := os.Lstat(trashed)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, fi.Mode().Type(), "the link itself went to the trash")
	require.NoError(t, s.GC(GCOptions{Trash: true}))
	assertUntouched(t, out, "secret")

	trashed, err = s.Remove("s")
	require.NoError(t, err)
	assert.DirExists(t, filepath.Join(trashed, WorkspaceDir))
	assert.True(t, strings.HasPrefix(trashed, s.TrashDir()+"/s."))
	_, err = s.Remove("s")
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = s.Remove("../x")
	assert.ErrorIs(t, err, ErrInvalidID)
}

func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenDir(dir)
	require.NoError(t, err)
	defer d.Close()
	out, secret := outside(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ok"), []byte("hi"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big"), make([]byte, 11), 0o644))
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "link")))
	require.NoError(t, os.Symlink(out, filepath.Join(dir, "dirlink")))
	for _, tc := range []struct {
		rel  string
		want string
		err  error
	}{
		{"ok", "hi", nil},
		{"big", "", ErrDamaged},
		{"fifo", "", ErrDamaged},
		{"link", "", ErrDamaged},
		{"dirlink/secret", "", syscall.ELOOP},
		{"../" + filepath.Base(dir) + "/ok", "", syscall.EXDEV},
		{"missing", "", os.ErrNotExist},
	} {
		t.Run(tc.rel, func(t *testing.T) {
			promptly(t, func() {
				b, err := d.ReadRegular(tc.rel, 10)
				if tc.err != nil {
					assert.ErrorIs(t, err, tc.err)
					return
				}
				require.NoError(t, err)
				assert.Equal(t, tc.want, string(b))
			})
		})
	}
}

// ReadRegular reads a file to its end, not to the size its stat gave: one that grew since is read whole, or is
// ErrDamaged once it grows past the limit. /proc's files say 0 bytes and hold more.
func TestReadRegularReadsToTheEnd(t *testing.T) {
	d, err := OpenDir("/proc/self")
	require.NoError(t, err)
	defer d.Close()
	want, err := os.ReadFile("/proc/self/limits") // the same for every thread of this process, and over 1 KiB
	require.NoError(t, err)
	require.Greater(t, len(want), 1024)
	got, err := d.ReadRegular("limits", 1<<20)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))
	_, err = d.ReadRegular("limits", 100)
	assert.ErrorIs(t, err, ErrDamaged)
	assert.ErrorContains(t, err, "grew past 100 bytes")

	dir := t.TempDir()
	d2, err := OpenDir(dir)
	require.NoError(t, err)
	defer d2.Close()
	for _, n := range []int{0, 1, 10} { // the limit itself is allowed
		require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), bytes.Repeat([]byte("x"), n), 0o644))
		got, err := d2.ReadRegular("f", 10)
		require.NoError(t, err)
		assert.Len(t, got, n)
	}
}

func TestProfileFollowsNoSymlinkAndSkipsFIFOs(t *testing.T) {
	prof := t.TempDir()
	out, secret := outside(t)
	require.NoError(t, os.WriteFile(filepath.Join(prof, "CLAUDE.md"), []byte("x"), 0o4755))
	require.NoError(t, unix.Mkfifo(filepath.Join(prof, "fifo"), 0o644))
	require.NoError(t, os.Symlink(out, filepath.Join(prof, "dirlink")))
	require.NoError(t, os.Symlink(secret, filepath.Join(prof, "filelink")))
	s := newStore(t)
	promptly(t, func() {
		_, err := s.Create("p", CreateOptions{Profile: prof})
		require.NoError(t, err)
	})
	c := filepath.Join(s.Dir("p"), ClaudeDir)
	fi, err := os.Lstat(filepath.Join(c, "CLAUDE.md"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode(), "no setuid bit from a template")
	assert.NoFileExists(t, filepath.Join(c, "fifo"))
	for _, l := range []string{"dirlink", "filelink"} {
		fi, err := os.Lstat(filepath.Join(c, l))
		require.NoError(t, err)
		assert.Equal(t, os.ModeSymlink, fi.Mode().Type())
	}
	assertUntouched(t, out, "secret")
}

// The entries Dir.ReadDir lists describe the session's files: an os.File's entries would lstat the folder's name
// joined to theirs from the working folder, a host file of the same name (a session's 1-byte file named "etc" was
// shown with the size of the host's /etc).
func TestReadDirEntriesAreStatedBeneath(t *testing.T) {
	session, host := t.TempDir(), t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(session, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(session, "sub", "etc"), []byte("x"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(host, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(host, "sub", "etc"), make([]byte, 4096), 0o644))
	t.Chdir(host)
	d, err := OpenDir(session)
	require.NoError(t, err)
	defer d.Close()
	for _, rel := range []string{"sub", "./sub/"} {
		ents, err := d.ReadDir(rel)
		require.NoError(t, err)
		require.Len(t, ents, 1)
		fi, err := ents[0].Info()
		require.NoError(t, err)
		assert.Equal(t, int64(1), fi.Size(), rel)
		assert.Equal(t, fs.FileMode(0o600), fi.Mode(), rel)
		assert.Equal(t, "etc", fi.Name())
	}
	ents, err := d.ReadDir(".")
	require.NoError(t, err)
	fi, err := ents[0].Info()
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
	assert.Equal(t, fs.ModeDir|0o755, fi.Mode())
}
