package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAttackTextViewSparseTranscript: a session's processes make 32 transcripts of 4 TiB that hold nothing
// (sparse files: truncate -s, no disk spent). A person's grep -rl over conversations/ finds what another session
// said, and sessionfs log of the session answers, instead of the daemon and the CLI reading terabytes of zeros
// for each listing of the session's conversations (an hour and more, a goroutine and a core per request; once
// bounded, seconds: hangBound is agents_opencode_db's).
func TestAttackTextViewSparseTranscript(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ok(t, store, "new", "s2")
	canon := func(id string) string {
		return filepath.Join(store, "sessions", id, ".claude", "projects", "-session-workspace")
	}
	const huge = "3a4b5c6d-0000-4000-8000-000000000001"
	for i := 1; i <= 32; i++ { // as many as it likes: what bounds one file's read must not be paid 32 times
		f, err := os.Create(filepath.Join(canon("s1"), fmt.Sprintf("3a4b5c6d-0000-4000-8000-%012d.jsonl", i)))
		require.NoError(t, err)
		require.NoError(t, f.Truncate(4<<40), "a filesystem with files of 4 TiB (ext4, xfs, btrfs, tmpfs)")
		require.NoError(t, f.Close())
	}
	line := `{"type":"user","message":{"role":"user","content":"the word is marmalade"},"timestamp":"2026-11-26T02:00:00Z"}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(canon("s2"), "3a4b5c6d-0000-4000-8000-000000000002.jsonl"), []byte(line), 0o600))
	m := mount(t, store)

	// bounded runs cmd and reports whether it ended within hangBound (the test fails if not). A process waiting
	// on the mount cannot be killed (the kernel waits for the daemon's answer to a request it sent): the daemon is
	// stopped then, which ends the wait.
	bounded := func(what string, cmd *exec.Cmd) (string, bool) {
		var out syncBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Start())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		start := time.Now()
		select {
		case err := <-done:
			t.Logf("%s: %s after %v", what, errText(err), time.Since(start).Round(time.Millisecond))
			return out.String(), true
		case <-time.After(hangBound):
			t.Errorf("%s hung on the sparse transcript: still waiting after %v", what, hangBound)
			m.stop(t)
			_ = cmd.Process.Kill()
			<-done
			return out.String(), false
		}
	}
	if out, ended := bounded("grep -rl over conversations/", exec.Command("grep", "-rl", "marmalade", filepath.Join(m.mnt, "conversations"))); ended {
		require.Contains(t, out, filepath.Join("s2", "claude"), "the other session's conversation found")
	}
	cmd := exec.Command(bin, "log", "s1", huge)
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	if out, ended := bounded("sessionfs log of the sparse transcript", cmd); ended {
		t.Logf("sessionfs log:\n%s", out)
		require.Contains(t, out, "left out", "log says what it left out")
	}
}

func errText(err error) string {
	if err == nil {
		return "done"
	}
	return err.Error()
}

// TestAttackTextViewParallelReaders: a session's processes make one transcript whose rendering fills the text
// view's bound (16 MiB) and give it 48 names (hard links: 16 MiB of disk). 48 readers at once (a parallel grep,
// rg) make the daemon render each conversation once at a time, a few at once: its peak memory stays within what a
// few renderings take, instead of every reader's rendering held at once (48 x 16 MiB and more).
func TestAttackTextViewParallelReaders(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	canon := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
	var b strings.Builder
	text := strings.Repeat("marmalade ", 25<<10) // 250 KiB: within a prompt's bound
	for i := 0; b.Len() < 20<<20; i++ {
		fmt.Fprintf(&b, `{"type":"user","message":{"role":"user","content":"%d %s"},"timestamp":"2026-11-26T02:00:00Z"}`+"\n", i, text)
	}
	first := filepath.Join(canon, "3a4b5c6d-0000-4000-8000-000000000000.jsonl")
	require.NoError(t, os.WriteFile(first, []byte(b.String()), 0o600))
	const readers = 48
	for i := 1; i < readers; i++ {
		require.NoError(t, os.Link(first, filepath.Join(canon, fmt.Sprintf("3a4b5c6d-0000-4000-8000-%012d.jsonl", i))))
	}
	m := mount(t, store)
	view := filepath.Join(m.mnt, "conversations", "s1", "claude")
	ents, err := os.ReadDir(view)
	require.NoError(t, err)
	require.Len(t, ents, readers)

	start := time.Now()
	var wg sync.WaitGroup
	sizes := make([]int, readers)
	for i, e := range ents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data, err := os.ReadFile(filepath.Join(view, e.Name()))
			assert.NoError(t, err)
			sizes[i] = len(data)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	pid := m.serverPID(t)
	select {
	case <-done:
	case <-time.After(hangBound):
		t.Errorf("%d readers at once had not read their renderings after %v (the daemon's peak memory: %s)",
			readers, hangBound, procStatus(t, pid)["VmHWM"])
		m.stop(t) // what the readers wait on ends with the daemon
		<-done
		return
	}
	peak := procStatus(t, pid)["VmHWM"]
	t.Logf("%d readers at once read %d renderings of %d MiB in %v; the daemon's peak memory: %s", readers, readers,
		sizes[0]>>20, time.Since(start).Round(time.Millisecond), peak)
	for _, n := range sizes {
		require.Greater(t, n, 15<<20, "each reader read the whole rendering")
	}
	kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(peak, "kB")))
	require.NoError(t, err)
	assert.Less(t, kb, 768<<10, "the daemon held every reader's rendering at once")
}
