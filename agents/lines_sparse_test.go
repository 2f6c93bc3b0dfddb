package agents_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
)

// A listing reads a session's conversation file that is a hole of a TiB between two lines by its data alone (the
// line the hole falls in malformed), never its zeros: those would take it an hour.
func TestScanLinesPassesHolesBy(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sparse.jsonl")
	f, err := os.Create(p)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteString("first\nsecond")
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("third\nfourth\n"), 1<<40)
	require.NoError(t, err, "a filesystem with files of a TiB")
	_, err = f.Seek(0, 0)
	require.NoError(t, err)
	var got []string
	malformed, err := agents.ScanLines(f, func(b []byte) error { got = append(got, string(b)); return nil })
	require.NoError(t, err)
	assert.Equal(t, 1, malformed)
	assert.Equal(t, []string{"first", "fourth"}, got)
}

type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// Endless data (no holes) is read to agents.MaxRead.
func TestScanLinesStopsAtMaxRead(t *testing.T) {
	malformed, err := agents.ScanLines(endless{}, func([]byte) error { return nil })
	require.NoError(t, err)
	assert.Equal(t, 1, malformed)
}
