package layout

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readRunLog(t *testing.T, s *Store, id string, n int) string {
	t.Helper()
	old, cur, err := s.OpenRunLog(id, n)
	require.NoError(t, err)
	defer cur.Close()
	var b bytes.Buffer
	if old != nil {
		_, err = io.Copy(&b, old)
		old.Close()
		require.NoError(t, err)
	}
	_, err = io.Copy(&b, cur)
	require.NoError(t, err)
	return b.String()
}

// The log keeps the last part of the output within its cap: between half the cap and the cap, never more, the
// newest byte always kept. A write larger than the cap keeps its end.
func TestRunLogCapKeepsTheEnd(t *testing.T) {
	s := newStore(t)
	const capBytes = 1000
	l, err := s.CreateRunLog("web", 1, -1, -1, capBytes)
	require.NoError(t, err)
	var all strings.Builder
	for i := 0; i < 400; i++ {
		line := strings.Repeat(string(rune('a'+i%26)), 9) + "\n"
		n, err := l.Write([]byte(line))
		require.NoError(t, err)
		require.Equal(t, len(line), n)
		all.WriteString(line)
		got := readRunLog(t, s, "web", 1)
		require.LessOrEqual(t, len(got), capBytes, "the cap holds after %d lines", i+1)
		require.True(t, strings.HasSuffix(all.String(), got), "the log is the end of the output")
		if all.Len() >= capBytes/2 {
			require.GreaterOrEqual(t, len(got), capBytes/2, "at least half the cap is kept")
		}
	}
	big := bytes.Repeat([]byte("0123456789"), 300)
	_, err = l.Write(big)
	require.NoError(t, err)
	all.Write(big)
	got := readRunLog(t, s, "web", 1)
	assert.LessOrEqual(t, len(got), capBytes)
	assert.True(t, strings.HasSuffix(got, string(big[len(big)-capBytes/2:])), "a write past the cap keeps its end")
	assert.True(t, strings.HasSuffix(all.String(), got), "the log is the end of the output")
	require.NoError(t, l.Err())
	require.NoError(t, l.Close())

	st, err := os.Lstat(s.RunLogPath("web", 1))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	assert.True(t, strings.HasPrefix(s.RunLogPath("web", 1), filepath.Join(s.Root, "logs")+"/"), "outside the sessions")
}

// A link planted where a log goes is never written through: it is replaced by the log.
func TestRunLogNeverFollowsALink(t *testing.T) {
	s := newStore(t)
	target := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(target, []byte("precious\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(s.Root, "logs", "web"), 0o700))
	require.NoError(t, os.Symlink(target, s.RunLogPath("web", 1)))
	require.NoError(t, os.Symlink(target, s.RunLogPath("web", 1)+".1"))
	require.NoError(t, os.Link(target, s.RunLogPath("web", 2)))
	for n := 1; n <= 2; n++ {
		l, err := s.CreateRunLog("web", n, -1, -1, 64)
		require.NoError(t, err)
		for i := 0; i < 10; i++ {
			_, _ = l.Write([]byte("overwritten\n")) // rotates too
		}
		require.NoError(t, l.Close())
	}
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "precious\n", string(b))
	st, err := os.Lstat(s.RunLogPath("web", 1))
	require.NoError(t, err)
	assert.True(t, st.Mode().IsRegular())
}

// A session's logs go with it: renamed, to the trash and back, deleted by gc with the session.
func TestRunLogsFollowTheSession(t *testing.T) {
	s := newStore(t)
	_, err := s.Create("a", CreateOptions{})
	require.NoError(t, err)
	l, err := s.CreateRunLog("a", 1, -1, -1, 0)
	require.NoError(t, err)
	_, _ = l.Write([]byte("hello\n"))
	require.NoError(t, l.Close())

	require.NoError(t, s.Rename("a", "b"))
	assert.Equal(t, "hello\n", readRunLog(t, s, "b", 1))
	_, _, err = s.OpenRunLog("a", 1)
	assert.ErrorIs(t, err, ErrNoLog)

	_, err = s.Remove("b")
	require.NoError(t, err)
	_, _, err = s.OpenRunLog("b", 1)
	assert.ErrorIs(t, err, ErrNoLog, "in the trash with its session")
	_, err = s.RestoreSession("b")
	require.NoError(t, err)
	assert.Equal(t, "hello\n", readRunLog(t, s, "b", 1))

	_, err = s.Remove("b")
	require.NoError(t, err)
	require.NoError(t, s.GC(GCOptions{Trash: true, Now: time.Now()}))
	ents, err := os.ReadDir(filepath.Join(s.Root, "logs", ".trash"))
	require.NoError(t, err)
	assert.Empty(t, ents, "deleted with the session")
}
