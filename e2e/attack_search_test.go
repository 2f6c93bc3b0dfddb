package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestSearchAttackSwapsTranscriptsWithLinks: while search indexes a session, the session's processes swap its
// transcript with a link to a host transcript, and its transcript folder with a link to the host folder
// (renameat2 RENAME_EXCHANGE, as fast as they can). The index, built by root here (the daemon's worst case), must
// never hold a byte of the host's.
func TestSearchAttackSwapsTranscriptsWithLinks(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	host := hostSecret(t)
	line := func(text string) string {
		return `{"type":"user","sessionId":"x","timestamp":"2026-11-26T01:00:00Z","cwd":"/w","message":{"role":"user","content":"` + text + `"}}` + "\n"
	}
	const hostConv = "c0ffee00-0000-4000-8000-0000000000f1"
	require.NoError(t, os.WriteFile(filepath.Join(host, hostConv+".jsonl"), []byte(line(hostMarker+" pelican")), 0o600))
	projects := filepath.Join(store, "sessions", "s1", ".claude", "projects")
	canon := filepath.Join(projects, "-session-workspace")
	require.NoError(t, os.WriteFile(filepath.Join(canon, "c0ffee00-0000-4000-8000-0000000000a1.jsonl"), []byte(line("own pelican")), 0o600))
	require.NoError(t, os.Symlink(filepath.Join(host, hostConv+".jsonl"), filepath.Join(canon, "c0ffee00-0000-4000-8000-0000000000a2.jsonl")))
	require.NoError(t, os.Symlink(host, filepath.Join(projects, "-evil")))

	stop := make(chan struct{})
	var swaps atomic.Int64
	done := make(chan struct{}, 2)
	exchange := func(dir, a, b string) {
		defer func() { done <- struct{}{} }()
		fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return
		}
		defer unix.Close(fd)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if unix.Renameat2(fd, a, fd, b, unix.RENAME_EXCHANGE) == nil {
				swaps.Add(1)
			}
		}
	}
	go exchange(canon, "c0ffee00-0000-4000-8000-0000000000a1.jsonl", "c0ffee00-0000-4000-8000-0000000000a2.jsonl")
	go exchange(projects, "-session-workspace", "-evil")
	defer func() { close(stop); <-done; <-done }()

	const maxRuns = 60
	runs, found, leaked := 0, 0, 0
	for runs < maxRuns && leaked == 0 {
		runs++
		args := []string{"search", "--json", "pelican"}
		if runs%4 == 0 {
			args = append(args, "--reindex") // every file read anew
		}
		r := cli(t, store, args...)
		require.Contains(t, []int{0, 1}, r.code, "a match, or none while the names are swapped: %s", r.stderr)
		if strings.Contains(r.stdout, "own pelican") {
			found++
		}
		if strings.Contains(r.stdout, hostMarker) || strings.Contains(r.stdout, hostConv) {
			leaked = runs
		}
	}
	t.Logf("%d searches (%d found the session's own transcript), %d swaps; host transcript indexed at search %d (0: never)",
		runs, found, swaps.Load(), leaked)
	assert.Zero(t, leaked, "a swapped name led the index into the host's folder")
	assert.NotZero(t, found, "the session's own transcript was never indexed: the race proved nothing")
	assert.NotZero(t, swaps.Load())
}
