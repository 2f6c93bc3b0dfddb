package mount

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
)

// TestReadVouched: a mount's word is read whole past the first buffer, never past maxVouched, and not at all
// when a read fails.
func TestReadVouched(t *testing.T) {
	big := bytes.Repeat([]byte("s00001 0123456789abcdef0123456789abcdef\n"), 3*vouchedRead/40)
	assert.True(t, bytes.Equal(big, readVouched(iotest.HalfReader(bytes.NewReader(big)))), "3 MiB, read in halves")
	assert.Empty(t, readVouched(bytes.NewReader(nil)))
	endless := io.LimitReader(zeros{}, maxVouched+vouchedRead)
	assert.Equal(t, maxVouched, len(readVouched(endless)), "a file past the bound: its first maxVouched bytes")
	assert.Nil(t, readVouched(io.MultiReader(bytes.NewReader(big[:10]), iotest.ErrReader(errors.New("gone")))))
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
