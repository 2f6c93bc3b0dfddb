package layout

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A removed copy is restored by the name trash ls shows, or under another id when its own is taken again; it
// takes its own owner's record along (to its new id), never another id's, nor a stale record left at the new id.
func TestRestoreSessionAs(t *testing.T) {
	s := newStore(t)
	copyOf := func(ns, mark string) string {
		t.Helper()
		_, err := s.Create("x", CreateOptions{Namespace: ns})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(s.Dir("x"), "mark"), []byte(mark), 0o644))
		trashed, err := s.Remove("x")
		require.NoError(t, err)
		return filepath.Base(trashed)
	}
	first, second := copyOf("a", "first"), copyOf("b", "second")
	_, err := s.Create("x", CreateOptions{Namespace: "c"})
	require.NoError(t, err)
	mark := func(id string) string {
		b, err := os.ReadFile(filepath.Join(s.Dir(id), "mark"))
		require.NoError(t, err)
		return string(b)
	}

	_, err = s.RestoreSessionAs("x", "")
	assert.ErrorIs(t, err, ErrExists, "x is taken again")
	_, err = s.RestoreSessionAs(first, "")
	assert.ErrorIs(t, err, ErrExists)

	// The older copy, by its name in the trash, as y.
	dir, err := s.RestoreSessionAs(first, "y")
	require.NoError(t, err)
	assert.Equal(t, s.Dir("y"), dir)
	assert.Equal(t, "first", mark("y"))
	assert.Equal(t, "a", ownerOf(t, s, "y"), "its own record, moved to its new id")
	assert.Equal(t, "c", ownerOf(t, s, "x"), "the live x keeps its own")
	m, err := s.Get("y")
	require.NoError(t, err)
	assert.Equal(t, "y", m.ID, "session.json's id follows")
	assert.NoFileExists(t, filepath.Join(s.Root, trashedOwnerRel(first)))

	// A stale record where the new id goes is not inherited: the copy's own replaces it.
	require.NoError(t, os.WriteFile(filepath.Join(s.Root, ownerRel("z")), []byte("evil\n"), 0o600))
	_, err = s.RestoreSessionAs("x", "z") // the newest copy of x, 'second'
	require.NoError(t, err)
	assert.NoDirExists(t, filepath.Join(s.TrashDir(), second))
	assert.Equal(t, "second", mark("z"))
	assert.Equal(t, "b", ownerOf(t, s, "z"))

	// A copy of no owner restored at an id with a stale record has no owner.
	_, err = s.Create("plain", CreateOptions{})
	require.NoError(t, err)
	trashed, err := s.Remove("plain")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(s.Root, ownerRel("w")), []byte("evil\n"), 0o600))
	_, err = s.RestoreSessionAs(filepath.Base(trashed), "w")
	require.NoError(t, err)
	assert.Equal(t, "", ownerOf(t, s, "w"))

	_, err = s.RestoreSessionAs(first, "v")
	assert.ErrorIs(t, err, ErrNotFound, "that copy is restored already")
	_, err = s.RestoreSessionAs("x", "bad/id")
	assert.ErrorIs(t, err, ErrInvalidID)
	assert.Equal(t, "c", ownerOf(t, s, "x"))
}
