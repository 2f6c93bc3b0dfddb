package ui

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

// TestAttackWorkspaceSwapRace is a session's process swapping a folder of its workspace for a symlink out of it
// (renameat2 RENAME_EXCHANGE, in a loop) while the page reads a file beneath that folder: the page shows the
// session's file or nothing, never the one outside.
func TestAttackWorkspaceSwapRace(t *testing.T) {
	st := newStore(t)
	dir := newSession(t, st, "racer", nil)
	ws := filepath.Join(dir, "workspace")
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "f.txt"), []byte("HOST-SECRET-race"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(ws, "d"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "d", "f.txt"), []byte("the session's own"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(ws, "x")))
	s := serve(t, st)

	var stop atomic.Bool
	var swaps atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			if unix.Renameat2(unix.AT_FDCWD, filepath.Join(ws, "d"), unix.AT_FDCWD, filepath.Join(ws, "x"), unix.RENAME_EXCHANGE) == nil {
				swaps.Add(1)
			}
		}
	}()
	const tries = 2000
	own, refused := 0, 0
	for range tries {
		_, body := s.get(t, "/s/racer/w/d/f.txt")
		require.NotContains(t, body, "HOST-SECRET", "a file outside the session was shown")
		if strings.Contains(body, "the session's own") {
			own++
		} else {
			refused++
		}
		_, body = s.get(t, "/s/racer/w/d/")
		require.NotContains(t, body, "HOST-SECRET")
	}
	stop.Store(true)
	<-done
	t.Logf("%d reads while the folder was swapped %d times: %d showed the session's file, %d nothing", tries, swaps.Load(), own, refused)
	assert.Positive(t, swaps.Load(), "the attacker swapped")
	assert.Positive(t, refused, "some reads met the symlink and were refused")
}

// TestAttackWorkspaceListingStatsNoHostFile: a session names a workspace file after a folder of the host's root
// ("etc"): the listing shows the size of the session's file, not of the host's /etc (os.DirEntry.Info stats
// the name joined to the path the folder was opened by, which for a folder opened by descriptor is no path of
// it: "/etc" for the workspace's root).
func TestAttackWorkspaceListingStatsNoHostFile(t *testing.T) {
	st := newStore(t)
	dir := newSession(t, st, "namer", nil)
	ws := filepath.Join(dir, "workspace")
	require.NoError(t, os.WriteFile(filepath.Join(ws, "etc"), []byte("x"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(ws, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "sub", "etc"), []byte("xy"), 0o644))
	s := serve(t, st)
	_, body := s.get(t, "/s/namer/w/")
	assert.Regexp(t, `href="/s/namer/w/etc">etc</a> <small>1 B</small>`, body, "the session's own file's size")
	_, body = s.get(t, "/s/namer/w/sub/")
	assert.Regexp(t, `href="/s/namer/w/sub/etc">etc</a> <small>2 B</small>`, body)
}
