package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// reviewPair makes session s1 on two stores (A here, B "there").
func reviewPair(t *testing.T) (storeA, storeB, sA, sB string) {
	storeA, storeB = t.TempDir(), t.TempDir()
	ok(t, storeA, "new", "s1")
	ok(t, storeB, "new", "s1")
	return storeA, storeB, filepath.Join(storeA, "sessions", "s1"), filepath.Join(storeB, "sessions", "s1")
}

func writeIn(t *testing.T, p, s string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(s), 0o600))
}

// grepTree lists the regular files under root holding marker.
func grepTree(root, marker string) []string {
	var hits []string
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(marker)) {
				hits = append(hits, strings.TrimPrefix(p, root))
			}
		}
		return nil
	})
	return hits
}

// TestAttackSyncReviewCredentialsInStateFiles: without --with-credentials, a push must carry no credential. export
// (travel) treats Claude's state file .claude.json (primaryApiKey), Kimi's config.toml (api_key) and opencode's
// database as files holding credentials and scrubs them; sync only skips travel.IsCredential names, so the keys
// reach the other machine in the clear.
func TestAttackSyncReviewCredentialsInStateFiles(t *testing.T) {
	srv := startSSHD(t)
	storeA, storeB, sA, _ := reviewPair(t)
	const key = "sk-ant-api03-REVIEWSECRET"
	// Both stores agree first (each new session has its own .claude/.claude.json); then the agent logs in on A.
	syncOK(t, storeA, srv.env, "s1", "b:"+storeB)
	time.Sleep(1100 * time.Millisecond)
	writeIn(t, filepath.Join(sA, ".claude", ".claude.json"), `{"primaryApiKey":"`+key+`-claude","hasCompletedOnboarding":true}`+"\n")
	writeIn(t, filepath.Join(sA, ".kimi-code", "config.toml"), "default_model = \"k2\"\n[providers.kimi]\napi_key = \""+key+"-kimi\"\n")
	writeIn(t, filepath.Join(sA, ".claude", ".credentials.json"), `{"claudeAiOauth":{"accessToken":"`+key+`-oauth"}}`+"\n")
	// Control: export of the same session leaves all three keys out.
	exp := cliIn(t, storeA, "", nil, "export", "s1", "-o", filepath.Join(t.TempDir(), "s1.tar.zst"))
	t.Logf("export: exit %d %s%s", exp.code, exp.stdout, exp.stderr)

	r := cliIn(t, storeA, "", srv.env, "sync", "push", "s1", "b:"+storeB)
	t.Logf("sync push: exit %d %s%s", r.code, r.stdout, r.stderr)
	require.Equal(t, 0, r.code)
	hits := grepTree(storeB, key)
	t.Logf("files on the other machine holding a key: %v", hits)
	assert.Empty(t, hits, "a push without --with-credentials carried credentials to the other machine")
}

// TestAttackSyncReviewJoinMemory: a conversation both sides appended to is joined in memory. The bound says a
// sync holds at most two copies of at most 64 MiB and their join; agents on either side can instead append
// millions of tiny lines, and merge.Lines/Conversation keep a slice header (24 B) and a line (48 B) per line,
// several times over: a 20 MB transcript per side makes the CLI's RSS grow to gigabytes.
func TestAttackSyncReviewJoinMemory(t *testing.T) {
	srv := startSSHD(t)
	storeA, storeB, sA, sB := reviewPair(t)
	rel := filepath.Join(".claude", "projects", "-session-workspace", "6a1f0c2e-1b2c-4d5e-8f90-123456789abc.jsonl")
	writeIn(t, filepath.Join(sA, rel), `{"type":"user","uuid":"u1","timestamp":"2026-01-01T00:00:00Z"}`+"\n")
	syncOK(t, storeA, srv.env, "s1", "b:"+storeB)
	require.FileExists(t, filepath.Join(sB, rel))
	const lines = 10_000_000
	for side, ch := range map[string]string{sA: "a\n", sB: "b\n"} {
		f, err := os.OpenFile(filepath.Join(side, rel), os.O_WRONLY|os.O_APPEND, 0)
		require.NoError(t, err)
		_, err = f.Write(bytes.Repeat([]byte(ch), lines))
		require.NoError(t, err)
		f.Close()
	}
	cmd := cliCommand(storeA, srv.env, "sync", "s1", "b:"+storeB)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	t.Logf("join of two %d MB transcripts (%d lines each): %v in %v, peak RSS %d MiB: %s", 2*lines>>20, lines, err, time.Since(start), rss>>20, out.String())
	// 3.2-3.9 GiB before the line bound; 200-260 MiB here after it, 640 MiB once under a loaded CI run (GC slack).
	assert.Less(t, rss, int64(1<<30), "the join's memory is not bounded by the file sizes")
}

// TestAttackSyncReviewLongNameStopsSync: an agent on the other machine names a file with a 250-byte part (Valid
// allows 255). The pull's temporary name (.<name>.tmp-<pid>-<n>) is then over NAME_MAX: the write fails with an
// error that is not a refusal, the whole sync stops there, and every file after it never syncs, on every run.
func TestAttackSyncReviewLongNameStopsSync(t *testing.T) {
	srv := startSSHD(t)
	storeA, storeB, sA, sB := reviewPair(t)
	writeIn(t, filepath.Join(sB, "workspace", strings.Repeat("n", 250)), "hostile\n")
	writeIn(t, filepath.Join(sB, "workspace", "zz-after.txt"), "wanted\n")
	for i := range 2 {
		r := cliIn(t, storeA, "", srv.env, "sync", "pull", "s1", "b:"+storeB)
		t.Logf("pull %d: exit %d %s%s", i, r.code, r.stdout, r.stderr)
	}
	_, err := os.Stat(filepath.Join(sA, "workspace", "zz-after.txt"))
	assert.NoError(t, err, "one badly named file there blocks the rest of the session from ever syncing")
}

// TestAttackSyncReviewConflictLocalNewer: a file changed on both sides where this side's copy is newer. settle
// pulls the remote's copy to <name>.sessionfs-conflict-<label>, but pull asks the remote for that new name (it
// does not exist there), so the step fails as "changed while the sync ran", every time: the session never settles.
func TestAttackSyncReviewConflictLocalNewer(t *testing.T) {
	srv := startSSHD(t)
	storeA, storeB, sA, sB := reviewPair(t)
	pA, pB := filepath.Join(sA, "workspace", "x.txt"), filepath.Join(sB, "workspace", "x.txt")
	writeIn(t, pA, "base\n")
	syncOK(t, storeA, srv.env, "s1", "b:"+storeB)
	require.Equal(t, "base\n", read(t, pB))
	writeIn(t, pB, "theirs, older\n")
	require.NoError(t, os.Chtimes(pB, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour)))
	writeIn(t, pA, "ours, newer!!\n")
	var last result
	for i := range 3 {
		last = cliIn(t, storeA, "", srv.env, "sync", "s1", "b:"+storeB)
		t.Logf("sync %d: exit %d %s%s", i, last.code, last.stdout, last.stderr)
	}
	assert.Equal(t, 0, last.code, "a conflict where this side is newer never settles")
	matches, _ := filepath.Glob(pA + ".sessionfs-conflict-*")
	assert.NotEmpty(t, matches, "the remote's copy kept beside here")
}

// raceFolder swaps dir (a real folder) with a symlink to outside in a tight loop (RENAME_EXCHANGE), until stop.
func raceFolder(t *testing.T, dir, outside string, stop *atomic.Bool, swaps *atomic.Int64) chan struct{} {
	alt := dir + ".alt"
	require.NoError(t, os.Symlink(outside, alt))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			if unix.Renameat2(unix.AT_FDCWD, dir, unix.AT_FDCWD, alt, unix.RENAME_EXCHANGE) == nil {
				swaps.Add(1)
			}
		}
	}()
	return done
}

// sftpFolderRace: an agent on B swaps workspace/d for a link out while A pushes into it, tries times.
func sftpFolderRace(t *testing.T, env []string, tries int, flags ...string) (wins int, tried int) {
	storeA, storeB, sA, sB := reviewPair(t)
	outside := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(sB, "workspace", "d"), 0o755))
	writeIn(t, filepath.Join(sA, "workspace", "d", "seed.txt"), "seed\n")
	syncOK(t, storeA, env, append([]string{"s1", "b:" + storeB}, flags...)...)
	var stop atomic.Bool
	var swaps atomic.Int64
	done := raceFolder(t, filepath.Join(sB, "workspace", "d"), outside, &stop, &swaps)
	deadline := time.Now().Add(45 * time.Second)
	for i := 0; i < tries && time.Now().Before(deadline); i++ {
		tried++
		writeIn(t, filepath.Join(sA, "workspace", "d", fmt.Sprintf("f%03d.txt", i)), "pushed by A\n")
		before, _ := os.ReadDir(outside)
		cliIn(t, storeA, "", env, append([]string{"sync", "push", "s1", "b:" + storeB}, flags...)...)
		after, _ := os.ReadDir(outside)
		if len(after) > len(before) {
			wins++
		}
	}
	stop.Store(true)
	<-done
	ents, _ := os.ReadDir(outside)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	t.Logf("%d swaps; %d of %d pushes wrote into the folder outside the session; it holds %v", swaps.Load(), wins, tried, names)
	return wins, tried
}

// TestAttackSyncReviewSFTPFolderRace: with OpenSSH's sftp-server there, a folder of B's session swapped for a link
// (RENAME_EXCHANGE) between the client's Lstat checks and its open/rename redirects the write out of the session:
// that is why sync refuses such a machine unless --unconfined (TestSyncRefusesUnconfinedRemote); how often the
// race wins with the flag is logged. With sessionfs there (sync-serve), it never wins.
func TestAttackSyncReviewSFTPFolderRace(t *testing.T) {
	srv := startSSHD(t)
	t.Run("sftp-server there, --unconfined", func(t *testing.T) {
		wins, tried := sftpFolderRace(t, srv.plainSFTP(), 30, "--unconfined")
		t.Logf("measured, not asserted: %d of %d pushes to an unconfined machine landed outside", wins, tried)
	})
	t.Run("sessionfs there", func(t *testing.T) {
		wins, _ := sftpFolderRace(t, srv.env, 60)
		assert.Zero(t, wins, "writes landed outside B's session")
	})
}
