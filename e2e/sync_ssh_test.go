package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncOK runs sessionfs sync in store A with the test's ssh and requires success, returning stdout.
func syncOK(t *testing.T, store string, env []string, args ...string) string {
	t.Helper()
	r := cliIn(t, store, "", env, append([]string{"sync"}, args...)...)
	require.Equal(t, 0, r.code, "sessionfs sync %v: %s%s", args, r.stdout, r.stderr)
	t.Logf("sync %v: %s", args, strings.TrimSpace(r.stdout))
	return r.stdout
}

// TestSyncCarriesConversationOverSSH is issue 54's first proof: two stores on this machine stand for two hosts,
// a real sshd between them. A Claude conversation begun on A is synced to B, carried on there from another cwd
// while A also adds a turn; after a sync both ways each store holds one conversation with every turn once, in
// order, and claude --resume on either side sends them all.
func TestSyncCarriesConversationOverSSH(t *testing.T) {
	needFUSE(t)
	srv := startSSHD(t)
	claude := claudeBin(t)
	api := stub(t, "127.0.0.1:0")
	storeA, storeB := t.TempDir(), t.TempDir()
	ok(t, storeA, "new", "s1")
	mA := mount(t, storeA)
	claudeA := filepath.Join(mA.session("s1"), ".claude")
	out, err := claudeRun(t, claude, api.URL, claudeA, filepath.Join(mA.session("s1"), "workspace"), "-p", "turn one on A")
	require.NoError(t, err, out)
	canonA := filepath.Join(storeA, "sessions", "s1", ".claude", "projects", "-session-workspace")
	files := transcripts(t, canonA)
	require.Len(t, files, 1)
	uuid := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
	require.NoError(t, os.WriteFile(filepath.Join(storeA, "sessions", "s1", "workspace", "notes.md"), []byte("from A\n"), 0o644))

	remote := "b:" + storeB
	syncOK(t, storeA, srv.env, "s1", remote)
	canonB := filepath.Join(storeB, "sessions", "s1", ".claude", "projects", "-session-workspace")
	fileB := filepath.Join(canonB, uuid+".jsonl")
	assert.Equal(t, read(t, files[0]), read(t, fileB), "B holds A's transcript")
	assert.Equal(t, "from A\n", read(t, filepath.Join(storeB, "sessions", "s1", "workspace", "notes.md")))
	assert.Contains(t, ok(t, storeB, "ls", "-q"), "s1", "B's sessionfs sees the session")

	// B carries on from another cwd; then A adds a turn of its own.
	mB := mount(t, storeB)
	out, err = claudeRun(t, claude, api.URL, filepath.Join(mB.session("s1"), ".claude"), t.TempDir(), "-p", "--resume", uuid, "turn two on B")
	require.NoError(t, err, out)
	assert.NotContains(t, out, "No conversation found")
	out, err = claudeRun(t, claude, api.URL, claudeA, filepath.Join(mA.session("s1"), "workspace"), "-p", "--resume", uuid, "turn three on A")
	require.NoError(t, err, out)
	// How often each turn's words are in the copy it was made in (claude writes a prompt in more than one line).
	times := map[string]int{
		"turn one on A":   strings.Count(read(t, files[0]), "turn one on A"),
		"turn two on B":   strings.Count(read(t, fileB), "turn two on B"),
		"turn three on A": strings.Count(read(t, files[0]), "turn three on A"),
	}

	said := syncOK(t, storeA, srv.env, "s1") // the remote it remembers, both ways
	assert.Contains(t, said, "1 conversation joined")
	a, b := read(t, files[0]), read(t, fileB)
	assert.Equal(t, a, b, "both stores hold the same conversation")
	for turn, n := range times {
		assert.Equal(t, n, strings.Count(a, turn), "%q once", turn)
	}
	require.Len(t, transcripts(t, canonA), 1, "one conversation on A")
	require.Len(t, transcripts(t, canonB), 1, "one conversation on B")
	logInOrder(t, storeA, "claude", "turn one on A", "turn two on B", "turn three on A")
	logInOrder(t, storeB, "claude", "turn one on A", "turn two on B", "turn three on A")

	// claude --resume on either side sends every turn.
	onA, onB := 0, 0
	for _, side := range []struct {
		name, config, cwd string
	}{{"A", claudeA, filepath.Join(mA.session("s1"), "workspace")}, {"B", filepath.Join(mB.session("s1"), ".claude"), t.TempDir()}} {
		out, err = claudeRun(t, claude, api.URL, side.config, side.cwd, "-p", "--resume", uuid, "again on "+side.name)
		require.NoError(t, err, out)
		if side.name == "A" {
			onA = strings.Count(read(t, files[0]), "again on A")
		} else {
			onB = strings.Count(read(t, fileB), "again on B")
		}
		sent := api.LastMessages()
		for _, turn := range []string{"turn one on A", "turn two on B", "turn three on A"} {
			assert.Contains(t, sent, turn, "claude --resume on %s sends %q", side.name, turn)
		}
	}
	syncOK(t, storeA, srv.env, "s1")
	assert.Equal(t, read(t, files[0]), read(t, fileB), "the same bytes after the next sync")
	again := read(t, files[0])
	assert.Equal(t, onA, strings.Count(again, "again on A"))
	assert.Equal(t, onB, strings.Count(again, "again on B"))
	// Nothing left to do: a sync with no change moves nothing.
	assert.Contains(t, syncOK(t, storeA, srv.env, "s1"), "pushed 0 files (0 B), pulled 0 files (0 B)")
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

// cliCommand is the sessionfs command with args on store, not started.
func cliCommand(store string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "SESSIONFS_STORE="+store), env...)
	return cmd
}

// TestSyncRemoteFromConfig: a session that remembers no remote syncs with the store's config.toml's [sync] remote.
func TestSyncRemoteFromConfig(t *testing.T) {
	srv := startSSHD(t)
	storeA, storeB := t.TempDir(), t.TempDir()
	ok(t, storeA, "new", "s1")
	require.NoError(t, os.WriteFile(filepath.Join(storeA, "config.toml"), []byte("[sync]\nremote = \"b:"+storeB+"\"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(storeA, "sessions", "s1", "workspace", "a.txt"), []byte("a\n"), 0o644))
	assert.Contains(t, syncOK(t, storeA, srv.env, "s1"), "synced s1 with b:"+storeB)
	assert.Equal(t, "a\n", read(t, filepath.Join(storeB, "sessions", "s1", "workspace", "a.txt")))
}
