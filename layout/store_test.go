package layout

import (
	"encoding/json"
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

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := OpenStore(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestCreateMakesTheConvention(t *testing.T) {
	s := newStore(t)
	m, err := s.Create("s1", CreateOptions{Labels: map[string]string{"team": "a"}})
	require.NoError(t, err)
	assert.Equal(t, "s1", m.ID)
	p := Derive(s.Dir("s1"))
	for _, d := range []string{p.App, p.Workspace, p.MCPs, p.Claude, p.Canonical} {
		st, err := os.Stat(d)
		require.NoError(t, err, d)
		assert.True(t, st.IsDir())
	}
	b, err := os.ReadFile(p.Meta)
	require.NoError(t, err)
	var got Meta
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, "a", got.Labels["team"])

	_, err = s.Create("s1", CreateOptions{})
	assert.ErrorIs(t, err, ErrExists)
	_, err = s.Create("../evil", CreateOptions{})
	assert.ErrorIs(t, err, ErrInvalidID)
	assertNoStaging(t, s)
}

func assertNoStaging(t *testing.T, s *Store) {
	t.Helper()
	ents, _ := os.ReadDir(s.Root)
	for _, e := range ents {
		assert.False(t, strings.HasPrefix(e.Name(), ".new-"), "staging folder left behind: %s", e.Name())
	}
}

func TestGetListRemoveGC(t *testing.T) {
	s := newStore(t)
	for _, id := range []string{"b", "a"} {
		_, err := s.Create(id, CreateOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir("a"), "workspace", "f"), make([]byte, 10000), 0o644))
	_, err := s.Get("zz")
	assert.ErrorIs(t, err, ErrNotFound)

	infos, err := s.List()
	require.NoError(t, err)
	require.Len(t, infos, 2)
	assert.Equal(t, "a", infos[0].ID)
	assert.Greater(t, infos[0].Size, int64(10000))
	assert.WithinDuration(t, time.Now(), infos[0].LastActivity, time.Minute)

	trashed, err := s.Remove("a")
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(trashed, "workspace", "f"), "a removed session waits in the trash")
	assert.False(t, s.Exists("a"))
	_, err = s.Remove("a")
	assert.ErrorIs(t, err, ErrNotFound)

	// gc of idle sessions moves them to the trash; gc of the trash deletes for good.
	old := time.Now().Add(-48 * time.Hour)
	require.NoError(t, filepath.Walk(s.Dir("b"), func(p string, _ os.FileInfo, _ error) error {
		return os.Chtimes(p, old, old)
	}))
	var actions []string
	require.NoError(t, s.GC(GCOptions{IdleFor: 24 * time.Hour, Trash: true, OnRemoved: func(what, _ string, _ int64) {
		actions = append(actions, what)
	}}))
	assert.Equal(t, []string{"trash idle session", "delete", "delete"}, actions)
	ents, _ := os.ReadDir(s.TrashDir())
	require.Len(t, ents, 1, "only the transcripts folder is kept")
	assert.Equal(t, "transcripts", ents[0].Name())
	ids, _ := s.IDs()
	assert.Empty(t, ids)
}

func TestDamagedSessionIsListedWithReason(t *testing.T) {
	s := newStore(t)
	_, err := s.Create("ok", CreateOptions{})
	require.NoError(t, err)
	_, err = s.Create("bad", CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(Derive(s.Dir("bad")).Meta, []byte("{nope"), 0o644))
	require.NoError(t, os.MkdirAll(s.Dir("nometa"), 0o755))

	infos, err := s.List()
	require.NoError(t, err)
	require.Len(t, infos, 3)
	byID := map[string]Info{}
	for _, in := range infos {
		byID[in.ID] = in
	}
	assert.Contains(t, byID["bad"].Damaged, "damaged")
	assert.Contains(t, byID["nometa"].Damaged, "missing")
	assert.Empty(t, byID["ok"].Damaged)

	// Adopt repairs a folder without metadata, keeping its content.
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir("nometa"), "keep"), []byte("x"), 0o644))
	_, err = s.Adopt("nometa")
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(s.Dir("nometa"), "keep"))
	assert.DirExists(t, Derive(s.Dir("nometa")).Canonical)
}

func TestUpdateRecordsAliases(t *testing.T) {
	s := newStore(t)
	_, err := s.Create("s", CreateOptions{})
	require.NoError(t, err)
	m, err := s.Update("s", func(m *Meta) error {
		m.AddAlias("-home-u-x")
		m.AddAlias("-home-u-x")
		m.AddAlias(CanonicalProject)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"-home-u-x"}, m.Aliases)
	got, err := s.Get("s")
	require.NoError(t, err)
	assert.Equal(t, m.Aliases, got.Aliases)
}

func TestProfileIsCopied(t *testing.T) {
	prof := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(prof, "CLAUDE.md"), []byte("be nice"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(prof, "skills", "x"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(prof, "skills", "x", "SKILL.md"), []byte("s"), 0o644))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(prof, "link")))
	// A profile made by copying ~/.claude: its conversations and credentials stay behind.
	require.NoError(t, os.MkdirAll(filepath.Join(prof, "projects", "-home-me"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(prof, "projects", "-home-me", "a.jsonl"), []byte("{}\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(prof, ".credentials.json"), []byte("{}"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(prof, "history.jsonl"), []byte("{}\n"), 0o600))
	s := newStore(t)
	_, err := s.Create("p", CreateOptions{Profile: prof})
	require.NoError(t, err)
	c := Derive(s.Dir("p")).Claude
	b, err := os.ReadFile(filepath.Join(c, "CLAUDE.md"))
	require.NoError(t, err)
	assert.Equal(t, "be nice", string(b))
	assert.FileExists(t, filepath.Join(c, "skills", "x", "SKILL.md"))
	target, err := os.Readlink(filepath.Join(c, "link"))
	require.NoError(t, err)
	assert.Equal(t, "/etc/passwd", target, "links are copied as links, not followed")
	assert.NoFileExists(t, filepath.Join(c, ".credentials.json"))
	assert.NoFileExists(t, filepath.Join(c, "history.jsonl"))
	assert.NoFileExists(t, filepath.Join(c, "projects", "-home-me", "a.jsonl"))

	_, err = s.Create("q", CreateOptions{Profile: filepath.Join(prof, "missing")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(prof, "missing"), "the error names the profile")
	assert.False(t, s.Exists("q"), "a failed create leaves no session")
	assertNoStaging(t, s)
}

func TestReadOnlyStore(t *testing.T) {
	if os.Getuid() == 0 {
		// root ignores permission bits; a read-only bind mount is the honest test.
		root := t.TempDir()
		s, err := OpenStore(root)
		require.NoError(t, err)
		if err := exec.Command("mount", "--bind", "-o", "ro", root, root).Run(); err != nil {
			t.Skipf("cannot make a read-only bind mount: %v", err)
		}
		t.Cleanup(func() { _ = exec.Command("umount", root).Run() })
		t.Cleanup(func() { s.Close() })
		_, err = s.Create("x", CreateOptions{})
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrReadOnly)
		assert.ErrorIs(t, err, syscall.EROFS)
		return
	}
	root := t.TempDir()
	s, err := OpenStore(root)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(root, 0o555))
	t.Cleanup(func() { os.Chmod(root, 0o755) })
	_, err = s.Create("x", CreateOptions{})
	assert.ErrorIs(t, err, ErrPermission)
}

func TestFullStore(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	root := t.TempDir()
	if err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", root).Run(); err != nil {
		t.Skipf("cannot mount tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = exec.Command("umount", root).Run() })
	s, err := OpenStore(root)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() }) // before the umount: the store holds its folders open
	_, err = s.Create("keep", CreateOptions{})
	require.NoError(t, err)
	// Fill the disk, then try to create a session.
	f, err := os.Create(filepath.Join(root, "filler"))
	require.NoError(t, err)
	_, _ = f.Write(make([]byte, 128<<10))
	f.Close()
	prof := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(prof, "CLAUDE.md"), make([]byte, 8192), 0o644))
	_, err = s.Create("new", CreateOptions{Profile: prof})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrNoSpace)
	assert.False(t, s.Exists("new"))
	assertNoStaging(t, s)
	_, err = s.Get("keep")
	assert.NoError(t, err, "what was there is kept")
}

func TestFoldProjects(t *testing.T) {
	s := newStore(t)
	_, err := s.Create("s", CreateOptions{})
	require.NoError(t, err)
	p := Derive(s.Dir("s"))
	stray := filepath.Join(p.Projects, "-tmp-st-sessions-s-workspace")
	require.NoError(t, os.MkdirAll(filepath.Join(stray, "u1", "subagents"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(stray, "u1.jsonl"), []byte("a"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(stray, "u1", "subagents", "agent-1.jsonl"), []byte("b"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(stray, "same.jsonl"), []byte("theirs"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(p.Canonical, "same.jsonl"), []byte("ours"), 0o600))

	folded, err := FoldProjects(s.Dir("s"))
	require.NoError(t, err)
	assert.Equal(t, []string{"-tmp-st-sessions-s-workspace"}, folded)
	assert.NoDirExists(t, stray)
	b, _ := os.ReadFile(filepath.Join(p.Canonical, "u1", "subagents", "agent-1.jsonl"))
	assert.Equal(t, "b", string(b))
	b, _ = os.ReadFile(filepath.Join(p.Canonical, "same.jsonl"))
	assert.Equal(t, "ours", string(b))
	b, _ = os.ReadFile(filepath.Join(p.Canonical, "same.jsonl.sessionfs-conflict-fold"))
	assert.Equal(t, "theirs", string(b), "both are kept")
	folded, err = FoldProjects(s.Dir("s"))
	require.NoError(t, err)
	assert.Empty(t, folded)
}

func TestTrashedNameRoundTrip(t *testing.T) {
	now := time.Date(2026, 11, 23, 9, 30, 0, 123456789, time.UTC)
	for _, id := range []string{"s1", "a.b.c", "20261122-093000-1a2b3c"} {
		got, removed, ok := parseTrashName(trashedName(id, now))
		assert.True(t, ok, id)
		assert.Equal(t, id, got)
		assert.True(t, removed.Equal(now), id)
	}
	for _, name := range []string{"transcripts", "s1", ".20261123T093000.123456789Z", "../x.20261123T093000.123456789Z", "s1.2026"} {
		_, _, ok := parseTrashName(name)
		assert.False(t, ok, name)
	}
}

// An agent's folders fold the same way, limited to its view names, and each keeps its own claim file.
func TestFoldViewsKeepsOwnFile(t *testing.T) {
	s := newStore(t)
	_, err := s.Create("s", CreateOptions{})
	require.NoError(t, err)
	tmp := filepath.Join(s.Dir("s"), ".gemini", "tmp")
	for name, files := range map[string][]string{
		"ws":        {".project_root", "chats/session-1.jsonl", "logs.json"},
		"ws-1":      {".project_root"},
		"bin":       {"rg"},
		"workspace": {".project_root", "logs.json"},
	} {
		for _, f := range files {
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(tmp, name, f)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(tmp, name, f), []byte(name), 0o644))
		}
	}
	isView := func(n string) bool { return n != "bin" }
	folded, err := s.FoldViews("s", ".gemini/tmp", "workspace", isView, ".project_root")
	require.NoError(t, err)
	assert.Equal(t, []string{"ws"}, folded, "ws-1 holds only its claim: nothing to fold")
	b, _ := os.ReadFile(filepath.Join(tmp, "workspace", "chats", "session-1.jsonl"))
	assert.Equal(t, "ws", string(b))
	b, _ = os.ReadFile(filepath.Join(tmp, "workspace", ".project_root"))
	assert.Equal(t, "workspace", string(b), "the canonical folder keeps its own claim")
	b, _ = os.ReadFile(filepath.Join(tmp, "ws", ".project_root"))
	assert.Equal(t, "ws", string(b), "each name keeps its claim")
	assert.FileExists(t, filepath.Join(tmp, "workspace", "logs.json.sessionfs-conflict-fold"))
	assert.NoFileExists(t, filepath.Join(tmp, "ws", "logs.json"))
	assert.FileExists(t, filepath.Join(tmp, "bin", "rg"), "a folder that is no view is left alone")
	folded, err = s.FoldViews("s", ".gemini/tmp", "workspace", isView, ".project_root")
	require.NoError(t, err)
	assert.Empty(t, folded)
}
