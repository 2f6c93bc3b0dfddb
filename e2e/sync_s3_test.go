package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/internal/s3server"
)

// TestSyncCarriesConversationThroughS3 is issue 54's proof through a bucket: a real S3 server (versitygw) between
// two stores on this machine. A begins a Claude conversation and syncs; B, which never had the session, syncs it
// in, carries it on from another cwd while A adds a turn; after each syncs both ways (B, A, then B), each store
// holds one conversation with every turn once, in order, and claude --resume on either side sends them all.
func TestSyncCarriesConversationThroughS3(t *testing.T) {
	needFUSE(t)
	need(t, s3server.Path() != "", "versitygw not installed (make installs it; or set SESSIONFS_VERSITYGW)")
	s3server.Start(t) // the AWS_* environment now points at it, for both stores
	claude := claudeBin(t)
	api := stub(t, "127.0.0.1:0")
	storeA, storeB := t.TempDir(), t.TempDir()
	bucket := "s3://" + s3server.Bucket + "/team"
	ok(t, storeA, "new", "s1")
	mA := mount(t, storeA)
	claudeA := filepath.Join(mA.session("s1"), ".claude")
	wsA := filepath.Join(mA.session("s1"), "workspace")
	out, err := claudeRun(t, claude, api.URL, claudeA, wsA, "-p", "turn one on A")
	require.NoError(t, err, out)
	files := transcripts(t, filepath.Join(storeA, "sessions", "s1", ".claude", "projects", "-session-workspace"))
	require.Len(t, files, 1)
	uuid := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")

	syncOK(t, storeA, nil, "s1", bucket)
	assert.Contains(t, syncOK(t, storeB, nil, "s1", bucket), "pulled", "B makes the session it never had")
	canonB := filepath.Join(storeB, "sessions", "s1", ".claude", "projects", "-session-workspace")
	fileB := filepath.Join(canonB, uuid+".jsonl")
	assert.Equal(t, read(t, files[0]), read(t, fileB))

	mB := mount(t, storeB)
	claudeB := filepath.Join(mB.session("s1"), ".claude")
	out, err = claudeRun(t, claude, api.URL, claudeB, t.TempDir(), "-p", "--resume", uuid, "turn two on B")
	require.NoError(t, err, out)
	assert.NotContains(t, out, "No conversation found")
	out, err = claudeRun(t, claude, api.URL, claudeA, wsA, "-p", "--resume", uuid, "turn three on A")
	require.NoError(t, err, out)
	times := map[string]int{
		"turn one on A":   strings.Count(read(t, files[0]), "turn one on A"),
		"turn two on B":   strings.Count(read(t, fileB), "turn two on B"),
		"turn three on A": strings.Count(read(t, files[0]), "turn three on A"),
	}

	syncOK(t, storeB, nil, "s1") // B's turn goes up
	assert.Contains(t, syncOK(t, storeA, nil, "s1"), "1 conversation joined")
	syncOK(t, storeB, nil, "s1") // B takes the join
	a, b := read(t, files[0]), read(t, fileB)
	assert.Equal(t, a, b, "both stores hold the same conversation")
	for turn, n := range times {
		assert.Equal(t, n, strings.Count(a, turn), "%q once", turn)
	}
	require.Len(t, transcripts(t, canonB), 1, "one conversation on B")
	logInOrder(t, storeA, "claude", "turn one on A", "turn two on B", "turn three on A")
	logInOrder(t, storeB, "claude", "turn one on A", "turn two on B", "turn three on A")
	for _, side := range []struct{ name, config, cwd string }{{"A", claudeA, wsA}, {"B", claudeB, t.TempDir()}} {
		out, err = claudeRun(t, claude, api.URL, side.config, side.cwd, "-p", "--resume", uuid, "again on "+side.name)
		require.NoError(t, err, out)
		for turn := range times {
			assert.Contains(t, api.LastMessages(), turn, "claude --resume on %s sends %q", side.name, turn)
		}
	}
	// What the bucket holds is compressed blocks named by their bytes, and a manifest: no transcript in the clear.
	_, err = os.Stat(filepath.Join(storeA, "sync", "s1"))
	require.NoError(t, err, "A keeps its last agreed state beside the sessions")
}
