package nodelog

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestAttackNodeLogCannotShrink: the node log is mapped by whoever reads it (the daemon taking over, doctor as
// root), and the daemon that writes it holds its file: a daemon a session subverted (seccomp allows ftruncate)
// could shrink it under a reader's mapping, which then dies of SIGBUS. The file is sealed at its size before
// any other process gets it.
func TestAttackNodeLogCannotShrink(t *testing.T) {
	l, err := New()
	require.NoError(t, err)
	defer l.Close()
	assert.Error(t, unix.Ftruncate(l.fd, 0), "the node log was shrunk")
	assert.Error(t, unix.Ftruncate(l.fd, 2*maxSize), "the node log was grown")
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(l.fd, &st))
	assert.EqualValues(t, maxSize, st.Size)
	l.Named(2, 1, "a", 10)
	nodes, _, err := l.Read()
	require.NoError(t, err)
	assert.Len(t, nodes, 1, "control: the sealed log is written and read")
}
