package text

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSafeWriterIsSafeAcrossWrites: a stream escaped through SafeWriter, however it is cut into writes, is what
// Safe makes of it whole: a rune or a "\r\n" split between two writes shows as it would unsplit.
func TestSafeWriterIsSafeAcrossWrites(t *testing.T) {
	in := "ok\tdone\r\nclip \x1b]52;c;cHduZWQ=\x07 title \x1b]0;pwned\x07 clear \x1b[2J c1 \u009b31m café ☃ 🦊\r \xff end\r"
	want := Safe(in, 0)
	require.NotContains(t, want, "\x1b")
	for size := 1; size <= len(in); size++ {
		var out bytes.Buffer
		w := NewSafeWriter(&out)
		for i := 0; i < len(in); i += size {
			n, err := w.Write([]byte(in[i:min(i+size, len(in))]))
			require.NoError(t, err)
			require.Equal(t, min(size, len(in)-i), n)
		}
		require.NoError(t, w.Close())
		assert.Equal(t, want, out.String(), "written %d bytes at a time", size)
	}
	assert.True(t, strings.Contains(want, `\x1b]52;c;cHduZWQ=\x07`) && strings.Contains(want, "ok\tdone\nclip"), want)
}
