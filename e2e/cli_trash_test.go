package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/layout"
)

// Defect 6: a session removed through the mount (rm -rf, find -delete) goes to the trash whole, workspace
// included, disappears from the mount, and trash ls / trash restore see it and bring it back as it was.
func TestRmRfSessionRecoverable(t *testing.T) {
	store := t.TempDir()
	const uuid = "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01"
	for _, id := range []string{"s1", "s2"} {
		ok(t, store, "new", id)
		ws := filepath.Join(store, "sessions", id, "workspace")
		require.NoError(t, os.MkdirAll(filepath.Join(ws, "src", "deep"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(ws, "src", "deep", "main.go"), []byte("package main\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("mine"), 0o644))
		canon := filepath.Join(store, "sessions", id, ".claude", "projects", "-session-workspace")
		require.NoError(t, os.WriteFile(filepath.Join(canon, uuid+".jsonl"), []byte(`{"type":"user"}`+"\n"), 0o600))
	}
	m := mount(t, store)
	assert.Empty(t, sh(t, m.mnt, "rm -rf sessions/s1"), "rm -rf says nothing")
	// find -delete takes session.json first too; it then reports the names that vanished with it.
	find := exec.Command("find", "sessions/s2", "-delete")
	find.Dir = m.mnt
	found, _ := find.CombinedOutput()
	assert.NotContains(t, string(found), "session.json", "session.json went first")
	for _, id := range []string{"s1", "s2"} {
		assert.NoDirExists(t, m.session(id), "the mount shows it gone")
		assert.NoDirExists(t, filepath.Join(store, "sessions", id))
	}
	assert.NotContains(t, sh(t, m.mnt, "ls sessions"), "s1")
	require.Len(t, trashedSessions(t, store), 2, "each session is in the trash, whole")

	out := ok(t, store, "trash", "ls")
	assert.Regexp(t, `(?m)^s1\s+.*s1\.\d{8}T`, out)
	assert.Regexp(t, `(?m)^s2\s+`, out)
	assert.Regexp(t, `(?m)^s1\s+`, ok(t, store, "trash", "ls", "s1"), "trash ls of a removed session lists it")
	var listed []layout.TrashedSession
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "trash", "ls", "--json")), &listed))
	require.Len(t, listed, 2)

	assert.Contains(t, ok(t, store, "trash", "restore", "s1"), "restored "+filepath.Join(store, "sessions", "s1"))
	for _, root := range []string{filepath.Join(store, "sessions", "s1"), m.session("s1")} {
		b, err := os.ReadFile(filepath.Join(root, "workspace", "src", "deep", "main.go"))
		require.NoError(t, err, "the workspace is back: %s", root)
		assert.Equal(t, "package main\n", string(b))
		assert.FileExists(t, filepath.Join(root, "workspace", "notes.txt"))
		assert.FileExists(t, filepath.Join(root, ".claude", "projects", "-session-workspace", uuid+".jsonl"))
	}
	assert.Contains(t, ok(t, store, "show", "s1"), uuid)
	require.Len(t, trashedSessions(t, store), 1)

	ok(t, store, "new", "s2")
	r := cli(t, store, "trash", "restore", "s2")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "already exists", "a session of that id again is never overwritten")
	r = cli(t, store, "trash", "restore", "nope")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "nothing of that id in the trash")
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

// Defect 10 of issue 40: trash restore takes the name trash ls shows (an older copy), and --as NEW puts a copy
// back under another id when its own is taken again; the copy's owner's record (Kubernetes tenancy) goes with it
// to the new id, and a stale record left there is not inherited.
func TestTrashRestoreByNameAndAs(t *testing.T) {
	store := t.TempDir()
	for _, mark := range []string{"one", "two"} {
		ok(t, store, "new", "s1")
		require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "s1", "workspace", "mark"), []byte(mark), 0o644))
		ok(t, store, "rm", "s1")
	}
	ok(t, store, "new", "s1")
	var listed []layout.TrashedSession
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "trash", "ls", "--json")), &listed))
	require.Len(t, listed, 2)
	older, newer := listed[1].Name, listed[0].Name // newest first
	assert.Contains(t, ok(t, store, "trash", "ls"), older, "the name is the one trash ls shows")
	owners := filepath.Join(store, "owners") // made outside Kubernetes, they have none: give the older one a record
	require.NoError(t, os.MkdirAll(filepath.Join(owners, ".trash"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(owners, ".trash", older), []byte("team-a\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(owners, "s1-new"), []byte("stale\n"), 0o600))

	r := cli(t, store, "trash", "restore", "s1")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "already exists")
	assert.Contains(t, r.stderr, "--as NEW", "the way out is named")
	r = cli(t, store, "trash", "restore", older)
	assert.Equal(t, 125, r.code, "by name too, s1 is taken: %s", r.stderr)

	assert.Equal(t, "restored "+filepath.Join(store, "sessions", "s1-old")+"\n", ok(t, store, "trash", "restore", older, "--as", "s1-old"))
	mark := func(id string) string {
		b, err := os.ReadFile(filepath.Join(store, "sessions", id, "workspace", "mark"))
		require.NoError(t, err)
		return string(b)
	}
	assert.Equal(t, "one", mark("s1-old"), "the older copy, by its name")
	assert.Contains(t, ok(t, store, "show", "s1-old"), "s1-old")
	b, err := os.ReadFile(filepath.Join(owners, "s1-old"))
	require.NoError(t, err, "its owner's record went with it")
	assert.Equal(t, "team-a\n", string(b))
	assert.NoFileExists(t, filepath.Join(owners, "s1"), "the live s1 has no owner, and got none")

	ok(t, store, "trash", "restore", "s1", "--as", "s1-new")
	assert.Equal(t, "two", mark("s1-new"), "the newest copy, by the id")
	assert.NoFileExists(t, filepath.Join(owners, "s1-new"), "a stale record at the new id is not inherited")
	assert.Empty(t, trashedSessions(t, store))
	assert.NoDirExists(t, filepath.Join(store, "trash", newer))

	r = cli(t, store, "trash", "restore", "s1", "2fe2d21b", "--as", "x")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "--as applies to a session")
}
