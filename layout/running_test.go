package layout

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rm and rename take the run lease: a session something runs in is refused, rm --force removes it all the same.
func TestRemoveAndRenameIdle(t *testing.T) {
	s := newStore(t)
	for _, id := range []string{"a", "b"} {
		_, err := s.Create(id, CreateOptions{})
		require.NoError(t, err)
	}
	assert.False(t, s.Running("a"))
	l, err := s.TryLease("a", ThisProcess())
	require.NoError(t, err)
	assert.True(t, s.Running("a"), "this process holds it")

	assert.ErrorIs(t, s.RenameIdle("a", "c"), ErrRunning)
	_, err = s.RemoveIdle("a", false)
	assert.ErrorIs(t, err, ErrRunning)
	assert.True(t, s.Exists("a"))
	trashed, err := s.RemoveIdle("a", true)
	require.NoError(t, err)
	assert.FileExists(t, trashed+"/session.json")
	require.NoError(t, l.Release())
	assert.False(t, s.Running("a"))

	require.NoError(t, s.RenameIdle("b", "c"))
	assert.True(t, s.Exists("c"))
	_, err = s.TryLease("c", ThisProcess())
	require.NoError(t, err, "rename gave the lease back")
	_, err = s.RemoveIdle("nothing", false)
	assert.ErrorIs(t, err, ErrNotFound)
}
