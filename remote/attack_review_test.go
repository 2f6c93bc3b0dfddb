package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
)

// TestAttackReviewSSHArgv: a REMOTE (typed, or remembered) never becomes an ssh option: every name taken from it
// comes after "--", or as the value of -p (digits) or -l (not starting with "-"). A fake ssh logs its argv.
func TestAttackReviewSSHArgv(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "argv")
	fake := filepath.Join(dir, "ssh")
	os.WriteFile(fake, []byte("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> "+log+"; done\necho --END-- >> "+log+"\nexit 127\n"), 0o755)
	t.Setenv("SESSIONFS_SSH", fake)
	hostile := []string{
		"-oProxyCommand=touch /tmp/pwned:store",
		"ssh://-oProxyCommand=touch%20/tmp/pwned/store",
		"-lroot@host:store",
		"user@-oProxyCommand=x:store",
		"-p22:store",
		"ssh://user@host:-oProxyCommand=x/store",
		"ssh://-l@host/store",
		"ssh://host:22;id/store",
		"host:'$(touch /tmp/pwned)'",
		"a@b@-oProxyCommand=x:store",
	}
	for _, url := range hostile {
		os.Remove(log)
		_, err := OpenSSH(context.Background(), url, "s1")
		b, _ := os.ReadFile(log)
		for _, run := range strings.Split(strings.TrimSpace(string(b)), "--END--") {
			lines := strings.Split(strings.Trim(run, "\n"), "\n")
			for i, a := range lines {
				if a == "--" {
					break
				}
				if strings.Contains(strings.ToLower(a), "proxycommand") || (strings.HasPrefix(a, "-") && i > 0 && (lines[i-1] == "-p" || lines[i-1] == "-l")) {
					t.Errorf("remote %q became an ssh option: %q in %q", url, a, lines)
				}
			}
		}
		t.Logf("%q: %v; argv: %q", url, err, strings.ReplaceAll(string(b), "\n", " "))
	}
	if _, err := os.Stat("/tmp/pwned"); err == nil {
		t.Error("/tmp/pwned made")
	}
}

// TestAttackReviewBucketNamesAndLocalRace: a bucket written by someone else names the store's own records
// (session.json, .sessionfs-run) and a credential; and while the pull writes, an agent here swaps the folder it
// writes into for a link out of the session, in a loop. Only the plain files come in, all beneath the session.
func TestAttackReviewBucketNamesAndLocalRace(t *testing.T) {
	startS3(t)
	mc := testClient(t)
	h := hostile{t, mc}
	const id = "s1"
	const files = 300
	m := s3Manifest{Version: 1, ID: id, Files: map[string]s3Entry{}}
	body := []byte("from the bucket\n")
	bh := hashOf(body)
	h.put("team/a/"+id+"/blocks/"+bh, zstdOf(body))
	for _, rel := range []string{"session.json", ".sessionfs-run/evil", ".claude/.credentials.json", "workspace/.sessionfs-sync-1"} {
		m.Files[rel] = s3Entry{Size: int64(len(body)), Mode: 0o644, Blocks: []string{bh}}
	}
	for i := range files {
		m.Files[fmt.Sprintf("workspace/d/f%03d.txt", i)] = s3Entry{Size: int64(len(body)), Mtime: int64(i) * 1e9, Mode: 0o644, Blocks: []string{bh}}
	}
	b, _ := json.Marshal(m)
	h.put("team/a/"+id+"/manifest.json", b)

	wins, tries := 0, 0
	var totalSwaps int64
	for try := range 8 {
		root := t.TempDir()
		store, err := layout.OpenStore(root)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Create(id, layout.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		sess := filepath.Join(root, "sessions", id)
		meta, _ := os.ReadFile(filepath.Join(sess, "session.json"))
		outside := t.TempDir()
		d := filepath.Join(sess, "workspace", "d")
		os.MkdirAll(d, 0o755)
		os.Symlink(outside, d+".alt")
		var stop atomic.Bool
		var swaps atomic.Int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			for !stop.Load() {
				if unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, d+".alt", unix.RENAME_EXCHANGE) == nil {
					swaps.Add(1)
				}
			}
		}()
		r, err := openS3(context.Background(), testURL, id, nil)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Sync(context.Background(), store, id, r, Options{Direction: Pull})
		// r is not closed: a pull's Get goroutine can outlive Sync (TestAttackReviewLocalLinkAbortsSync).
		stop.Store(true)
		<-done
		tries++
		totalSwaps += swaps.Load()
		if ents, _ := os.ReadDir(outside); len(ents) > 0 {
			wins++
			t.Errorf("try %d: %d entries written outside the session", try, len(ents))
		}
		if now, _ := os.ReadFile(filepath.Join(sess, "session.json")); string(now) != string(meta) {
			t.Errorf("session.json taken from the bucket")
		}
		for _, rel := range []string{".sessionfs-run/evil", ".claude/.credentials.json", "workspace/.sessionfs-sync-1"} {
			if _, err := os.Lstat(filepath.Join(sess, rel)); err == nil {
				t.Errorf("%s taken from the bucket", rel)
			}
		}
		t.Logf("try %d: pulled %d, changed %d, refused %d, err %v, %d swaps", try, rep.Pulled, rep.Changed, len(rep.Refused), err, swaps.Load())
		store.Close()
	}
	t.Logf("%d of %d pulls raced by %d folder swaps wrote outside the session", wins, tries, totalSwaps)
}

// TestAttackReviewLocalLinkAbortsSync: a folder of this session that is a link (an agent's, made any time: no race)
// where the remote has files. The remote side refuses such a file and goes on ("is not a folder there"); here the
// Lstat's ELOOP is a plain error, so the whole sync stops at the first such file and nothing after it ever syncs.
// And Sync returns while the pull's Get goroutine still runs: the CLI's deferred Close then frees the remote (the
// zstd decoder) under it (go test -race reports it).
func TestAttackReviewLocalLinkAbortsSync(t *testing.T) {
	startS3(t)
	h := hostile{t, testClient(t)}
	const id = "s2"
	big := random(t, 3*s3BlockSize)
	var blocks []string
	for off := 0; off < len(big); off += s3BlockSize {
		p := big[off : off+s3BlockSize]
		blocks = append(blocks, hashOf(p))
		h.put("team/a/"+id+"/blocks/"+hashOf(p), zstdOf(p))
	}
	small := []byte("wanted\n")
	h.put("team/a/"+id+"/blocks/"+hashOf(small), zstdOf(small))
	m := s3Manifest{Version: 1, ID: id, Files: map[string]s3Entry{
		"workspace/lnk/big.bin": {Size: int64(len(big)), Mode: 0o644, Blocks: blocks},
		"workspace/z.txt":       {Size: int64(len(small)), Mode: 0o644, Blocks: []string{hashOf(small)}},
	}}
	b, _ := json.Marshal(m)
	h.put("team/a/"+id+"/manifest.json", b)

	root := t.TempDir()
	store, err := layout.OpenStore(root)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.Create(id, layout.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sess := filepath.Join(root, "sessions", id)
	os.Symlink(t.TempDir(), filepath.Join(sess, "workspace", "lnk")) // the agent's own link, to a folder it uses
	r, err := openS3(context.Background(), testURL, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Sync(context.Background(), store, id, r, Options{Direction: Pull})
	r.Close() // as runSync's defer does
	t.Logf("pull: %+v, err %v", rep, err)
	if _, serr := os.Stat(filepath.Join(sess, "workspace", "z.txt")); serr != nil {
		t.Errorf("a link in this session stops the whole sync: workspace/z.txt never pulled (%v)", err)
	}
}
