package text

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
)

// A session's transcript of a TiB that is a hole between two lines (no disk spent) is read by its data alone: the
// line the hole falls in is a note with its length, the lines around it read; the zeros are never read.
func TestScanLinesPassesHolesBy(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sparse.jsonl")
	f, err := os.Create(p)
	require.NoError(t, err)
	_, err = f.WriteString("first\nsecond")
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("third\nfourth\n"), 1<<40)
	require.NoError(t, err, "a filesystem with files of a TiB")
	for _, partial := range []bool{true, false} {
		_, err := f.Seek(0, io.SeekStart)
		require.NoError(t, err)
		var got []string
		off, err := scanLines(f, 0, partial, func(b []byte, off, n int64) error {
			if b == nil {
				got = append(got, tooLong(off, n, "").Text)
			} else {
				got = append(got, string(b))
			}
			return nil
		})
		require.NoError(t, err)
		assert.EqualValues(t, 1<<40+13, off, "read to the end")
		assert.Equal(t, []string{"first", tooLong(6, 1<<40-6+5, "").Text, "fourth"}, got)
	}
}

// endless is a reader of endless data that is no file (a pipe, a file with no holes).
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// At most agents.MaxRead bytes of data are read at once: a whole read ends with a note of what it left out, a
// follower reads on from past what it read.
func TestScanLinesReadsToMaxRead(t *testing.T) {
	for _, partial := range []bool{true, false} {
		var lengths []int64
		off, err := scanLines(endless{}, 0, partial, func(b []byte, off, n int64) error {
			assert.Nil(t, b, "no line of MaxRead is held")
			lengths = append(lengths, n)
			return nil
		})
		require.NoError(t, err)
		assert.EqualValues(t, agents.MaxRead, off)
		want := []int64{agents.MaxRead}
		if partial {
			want = append(want, -1)
		}
		assert.Equal(t, want, lengths, "partial %v: the cut line, then (a whole read) what was left out", partial)
	}
	assert.True(t, strings.HasPrefix(tooLong(agents.MaxRead, -1, "").Text, "(the rest of the file"))
}
