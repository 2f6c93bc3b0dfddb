package layout

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A run's number is recorded, so it stays the run's when older runs are dropped; runs recorded before numbers
// take their place, and a forged number is not taken.
func TestRunNumbers(t *testing.T) {
	m := &Meta{ID: "web", Runs: []Run{{}, {}}}
	assert.Equal(t, 3, m.NextRunNumber(), "unnumbered runs count by their place")
	m.Runs = append(m.Runs, Run{N: 7})
	assert.Equal(t, 8, m.NextRunNumber())
	i, ok := m.RunIndex(7)
	assert.True(t, ok)
	assert.Equal(t, 2, i)
	_, ok = m.RunIndex(5)
	assert.False(t, ok)
	m.Runs = m.Runs[2:] // the oldest dropped past MaxRuns
	i, ok = m.RunIndex(7)
	assert.True(t, ok, "a numbered run keeps its number")
	assert.Equal(t, 0, i)

	s := newStore(t)
	_, err := s.Create("web", CreateOptions{})
	require.NoError(t, err)
	meta := filepath.Join(s.Dir("web"), MetaFile)
	require.NoError(t, os.WriteFile(meta, []byte(`{"runs":[{"n":2000000000},{"n":-4},{"n":9}]}`), 0o644))
	got, err := s.Get("web")
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 9}, []int{got.RunNumber(0), got.RunNumber(1), got.RunNumber(2)}, "forged numbers dropped")
	assert.Equal(t, 10, got.NextRunNumber())
}

func TestParseRunID(t *testing.T) {
	for in, want := range map[string]struct {
		session string
		n       int
	}{"web": {"web", 0}, "web/3": {"web", 3}, "20260101-101010-abcdef/12": {"20260101-101010-abcdef", 12}} {
		s, n, err := ParseRunID(in)
		require.NoError(t, err, in)
		assert.Equal(t, want.session, s, in)
		assert.Equal(t, want.n, n, in)
		assert.Equal(t, in, map[bool]string{true: in, false: RunID(s, n)}[n == 0])
	}
	for _, bad := range []string{"web/", "web/0", "web/-1", "web/x", "/3", "web/3/4", "web/99999999999"} {
		_, _, err := ParseRunID(bad)
		assert.Error(t, err, bad)
	}
}
