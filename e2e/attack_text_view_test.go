package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAttackTextViewKeepsTranscriptsPrivate: on an --allow-other mount, another user (uid 65534) cannot read
// through conversations/ what the transcript's own permissions deny it (Claude writes its transcripts 0600), nor
// list the conversations of a session whose folder it may not enter; a world-readable one stays readable.
func TestAttackTextViewKeepsTranscriptsPrivate(t *testing.T) {
	need(t, os.Geteuid() == 0, "reads as uid 65534 on an --allow-other mount")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ok(t, store, "new", "s2")
	line := `{"type":"user","message":{"role":"user","content":"the secret is tangerine"},"timestamp":"2026-11-26T02:00:00Z","sessionId":"x","uuid":"u1"}` + "\n"
	private := "11111111-2222-3333-4444-555555555555"
	public := "22222222-2222-3333-4444-555555555555"
	canon := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
	require.NoError(t, os.WriteFile(filepath.Join(canon, private+".jsonl"), []byte(line), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(canon, public+".jsonl"), []byte(line), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "s2", ".claude", "projects", "-session-workspace", private+".jsonl"), []byte(line), 0o644))
	require.NoError(t, os.Chmod(filepath.Join(store, "sessions", "s2"), 0o700))
	m := mount(t, store, "--allow-other")
	openUp(t, m.mnt) // the mount's answers are all that 65534 meets
	view := filepath.Join(m.mnt, "conversations")
	asNobody := func(args ...string) (string, error) {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// root reads both (the owner of the files).
	b, err := os.ReadFile(filepath.Join(view, "s1", "claude", private+".md"))
	require.NoError(t, err)
	require.Contains(t, string(b), "tangerine")

	out, err := asNobody("cat", filepath.Join(view, "s1", "claude", private+".md"))
	assert.Error(t, err, "a 0600 transcript read by another user through the text view: %s", out)
	assert.NotContains(t, out, "tangerine")
	out, err = asNobody("cat", filepath.Join(view, "s1", "claude", public+".md"))
	assert.NoError(t, err, out)
	assert.Contains(t, out, "tangerine", "a world-readable transcript stays readable")
	out, err = asNobody("ls", filepath.Join(view, "s2"))
	assert.Error(t, err, "the conversations of a session whose folder 65534 may not enter: %s", out)
	out, err = asNobody("cat", filepath.Join(view, "s2", "claude", private+".md"))
	assert.Error(t, err, "nor read one by its name: %s", out)
	assert.NotContains(t, out, "tangerine")
}

// TestAttackTextViewKeepsConversationNamesPrivate: a transcript folder its owner made private (0700) keeps the
// names of the conversations in it (their ids, sizes, times) from other users; through conversations/, uid 65534
// cannot list them either.
func TestAttackTextViewKeepsConversationNamesPrivate(t *testing.T) {
	need(t, os.Geteuid() == 0, "reads as uid 65534 on an --allow-other mount")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	const id = "33333333-2222-3333-4444-555555555555"
	canon := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
	line := `{"type":"user","message":{"role":"user","content":"hello"},"timestamp":"2026-11-26T02:00:00Z"}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(canon, id+".jsonl"), []byte(line), 0o600))
	require.NoError(t, os.Chmod(canon, 0o700))
	openUp(t, filepath.Join(store, "sessions"))
	m := mount(t, store, "--allow-other")
	openUp(t, m.mnt)
	ls := func(dir string) (string, error) {
		cmd := exec.Command("ls", dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := ls(canon)
	require.Error(t, err, "the store denies 65534 the folder's names: %s", out)
	out, err = ls(filepath.Join(m.mnt, "conversations", "s1", "claude"))
	t.Logf("uid 65534 listing conversations/s1/claude: %v: %s", err, out)
	assert.NotContains(t, out, id, "the text view listed a private folder's conversations to 65534")
}
