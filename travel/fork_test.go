package travel

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
)

func TestForkCopiesTheSessionAsItIs(t *testing.T) {
	s := newStore(t)
	origin := fill(t, s, "s1")
	var rep *ForkReport
	promptly(t, func() { // the FIFO is skipped, never opened
		var err error
		rep, err = Fork(context.Background(), s, "s1", "s2", ForkOptions{})
		require.NoError(t, err)
	})
	assert.Positive(t, rep.Cloned+rep.Copied)
	assert.Contains(t, rep.Skipped, "workspace/fifo: a FIFO")
	fork := s.Dir("s2")

	m, err := s.Get("s2")
	require.NoError(t, err)
	assert.Equal(t, "s1", m.ForkedFrom)
	assert.Equal(t, "a", m.Labels["team"])
	var raw map[string]any
	b, err := os.ReadFile(filepath.Join(fork, "session.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &raw))
	assert.Equal(t, "s2", raw["id"])
	assert.Equal(t, "s1", raw["forked_from"])

	same := func(rel string) {
		a, err := os.ReadFile(filepath.Join(origin, rel))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(fork, rel))
		require.NoError(t, err, rel)
		assert.Equal(t, a, b, rel)
	}
	for _, rel := range []string{"workspace/main.go", "app/bundle.js", ".claude/.credentials.json", "workspace/deep/a/b/c.txt",
		".claude/projects/-session-workspace/u1/subagents/agent-1.jsonl"} {
		same(rel) // credentials too: a fork stays on this machine, with its owner
	}
	b, err = os.ReadFile(filepath.Join(fork, ".claude/projects/-session-workspace/u1.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, "{\"a\":1}\n{\"b\":2}\n", string(b), "a transcript is copied up to its last whole line")
	for link, target := range map[string]string{"workspace/rel-link": "main.go", "workspace/escape": "/etc/passwd"} {
		got, err := os.Readlink(filepath.Join(fork, link))
		require.NoError(t, err)
		assert.Equal(t, target, got, "links are copied as they are")
	}
	st, err := os.Stat(filepath.Join(fork, "workspace/run.sh"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), st.Mode().Perm())
	assert.True(t, st.ModTime().Equal(when))
	st, err = os.Stat(filepath.Join(fork, "workspace/deep/a"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o750), st.Mode().Perm())
	assert.True(t, st.ModTime().Equal(when))
	var a, l syscall.Stat_t
	require.NoError(t, syscall.Stat(filepath.Join(fork, "workspace/main.go"), &a))
	require.NoError(t, syscall.Stat(filepath.Join(fork, "workspace/main-link.go"), &l))
	assert.Equal(t, a.Ino, l.Ino, "hard links stay one file")
	require.NoError(t, syscall.Stat(filepath.Join(origin, "workspace/main.go"), &l))
	assert.NotEqual(t, a.Ino, l.Ino, "but not the origin's")
	if v := make([]byte, 16); true {
		if _, err := unix.Getxattr(filepath.Join(origin, "workspace/main.go"), "user.origin", v); err == nil {
			n, err := unix.Getxattr(filepath.Join(fork, "workspace/main.go"), "user.origin", v)
			require.NoError(t, err)
			assert.Equal(t, "here", string(v[:n]))
		}
	}
	_, err = os.Lstat(filepath.Join(fork, "workspace/fifo"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	// Writing to one never changes the other.
	require.NoError(t, os.WriteFile(filepath.Join(fork, "workspace/main.go"), []byte("changed\n"), 0o644))
	same("app/bundle.js")
	b, err = os.ReadFile(filepath.Join(origin, "workspace/main.go"))
	require.NoError(t, err)
	assert.Equal(t, "package main\n", string(b))
	assertClean(t, s)
}

func TestForkRefusals(t *testing.T) {
	s := newStore(t)
	fill(t, s, "s1")
	_, err := s.Create("taken", layout.CreateOptions{})
	require.NoError(t, err)
	_, err = Fork(context.Background(), s, "s1", "taken", ForkOptions{})
	assert.ErrorIs(t, err, layout.ErrExists)
	_, err = Fork(context.Background(), s, "s1", "../x", ForkOptions{})
	assert.ErrorIs(t, err, layout.ErrInvalidID)
	_, err = Fork(context.Background(), s, "nope", "x", ForkOptions{})
	assert.ErrorIs(t, err, layout.ErrNotFound)
	// A session whose session.json is a link (planted by the session) is damaged: not forked.
	require.NoError(t, os.Remove(filepath.Join(s.Dir("s1"), "session.json")))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(s.Dir("s1"), "session.json")))
	_, err = Fork(context.Background(), s, "s1", "x", ForkOptions{})
	assert.ErrorIs(t, err, layout.ErrDamaged)
	assert.False(t, s.Exists("x"))
	assertClean(t, s)
}

// A writer appending to a transcript while it is forked and exported (each line in two writes, so there is
// always a half line to catch) never leaves half a line in the copy.
func TestRunningWriterIsNotCopiedMidLine(t *testing.T) {
	s := newStore(t)
	_, err := s.Create("s1", layout.CreateOptions{})
	require.NoError(t, err)
	p := filepath.Join(s.Dir("s1"), ".claude/projects/-session-workspace/u1.jsonl")
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	require.NoError(t, err)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_, _ = fmt.Fprintf(w, `{"n":%d,"pad":"`, i)
			time.Sleep(100 * time.Microsecond) // a half line waits in the file
			_, _ = fmt.Fprintf(w, "%s\"}\n", strings.Repeat("x", i%300))
		}
	}()
	check := func(b []byte) {
		require.True(t, len(b) == 0 || b[len(b)-1] == '\n', "ends with a whole line")
		for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if line != "" {
				require.True(t, json.Valid([]byte(line)), "a whole JSON line: %q", line)
			}
		}
	}
	for i := range 5 {
		id := fmt.Sprintf("f%d", i)
		_, err := Fork(context.Background(), s, "s1", id, ForkOptions{})
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(s.Dir(id), ".claude/projects/-session-workspace/u1.jsonl"))
		require.NoError(t, err)
		check(b)

		archive, _ := export(t, s, "s1", ExportOptions{})
		dst := newStore(t)
		_, _, err = Import(context.Background(), dst, bytes.NewReader(archive), ImportOptions{})
		require.NoError(t, err)
		b, err = os.ReadFile(filepath.Join(dst.Dir("s1"), ".claude/projects/-session-workspace/u1.jsonl"))
		require.NoError(t, err)
		check(b)
	}
	close(stop)
	<-done
	require.NoError(t, w.Close())
}
