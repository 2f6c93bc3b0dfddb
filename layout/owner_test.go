package layout

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func ownerOf(t *testing.T, s *Store, id string) string {
	t.Helper()
	ns, err := s.Namespace(id)
	require.NoError(t, err)
	return ns
}

// The owner is the store's record, written by Create, whatever the session writes in its session.json.
func TestOwnerIsTheStoresRecord(t *testing.T) {
	s := newStore(t)
	_, err := s.Create("x", CreateOptions{Namespace: "a"})
	require.NoError(t, err)
	assert.Equal(t, "a", ownerOf(t, s, "x"))
	m, err := s.Get("x")
	require.NoError(t, err)
	assert.Equal(t, "a", m.Namespace, "session.json shows it too")

	// The session's processes write another namespace into session.json: the record does not move.
	meta := filepath.Join(s.Dir("x"), MetaFile)
	require.NoError(t, os.WriteFile(meta, []byte(`{"id":"x","namespace":"b"}`), 0o644))
	assert.Equal(t, "a", ownerOf(t, s, "x"))

	_, err = s.Create("plain", CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "", ownerOf(t, s, "plain"), "made outside Kubernetes: no owner")
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir("plain"), MetaFile), []byte(`{"id":"plain","namespace":"b"}`), 0o644))
	assert.Equal(t, "", ownerOf(t, s, "plain"), "a session cannot give itself an owner")
	assert.Equal(t, "", ownerOf(t, s, "none"), "no session")
}

// Concurrent creators of one id: one wins, and the record is the winner's (a loser never overwrites it).
func TestOwnerOfConcurrentCreates(t *testing.T) {
	s := newStore(t)
	const n = 8
	winners := make(chan string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ns := fmt.Sprintf("ns%d", i)
			if _, err := s.Create("race", CreateOptions{Namespace: ns}); err == nil {
				winners <- ns
			} else {
				assert.ErrorIs(t, err, ErrExists)
			}
		}()
	}
	wg.Wait()
	close(winners)
	var won []string
	for ns := range winners {
		won = append(won, ns)
	}
	require.Len(t, won, 1)
	assert.Equal(t, won[0], ownerOf(t, s, "race"))

	_, err := s.Create("race", CreateOptions{Namespace: "late"})
	assert.ErrorIs(t, err, ErrExists)
	assert.Equal(t, won[0], ownerOf(t, s, "race"), "a later creator neither")
}

// A record that cannot be written undoes the create: no session of no owner is left behind.
func TestCreateWithoutItsRecordIsUndone(t *testing.T) {
	s := newStore(t)
	_, err := s.Create("x", CreateOptions{Namespace: "Not/A/Namespace"})
	require.Error(t, err)
	assert.False(t, s.Exists("x"))
	assertNoStaging(t, s)
	assert.NoFileExists(t, filepath.Join(s.Root, ownersName, "x"))
}

// A record left at an id by a session gone without the store (removed by hand) is never inherited by the next
// session put at that id: made, renamed there, restored there, or placed there by a fork or an import.
func TestStaleOwnerIsNotInherited(t *testing.T) {
	s := newStore(t)
	stale := func(id string) {
		require.NoError(t, os.WriteFile(filepath.Join(s.Root, ownersName, id), []byte("a\n"), 0o600))
	}
	stale("made")
	_, err := s.Create("made", CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "", ownerOf(t, s, "made"))
	stale("made2")
	_, err = s.Create("made2", CreateOptions{Namespace: "b"})
	require.NoError(t, err)
	assert.Equal(t, "b", ownerOf(t, s, "made2"))

	stale("renamed")
	require.NoError(t, s.Rename("made", "renamed"))
	assert.Equal(t, "", ownerOf(t, s, "renamed"))
	assert.NoFileExists(t, filepath.Join(s.Root, ownersName, "renamed"))

	_, err = s.Remove("renamed")
	require.NoError(t, err)
	stale("renamed")
	_, err = s.RestoreSession("renamed")
	require.NoError(t, err)
	assert.Equal(t, "", ownerOf(t, s, "renamed"))

	// A session made aside (a fork, an import) and put in place.
	stale("placed")
	require.NoError(t, os.Mkdir(filepath.Join(s.SessionsDir(), ".stage-placed"), 0o755))
	require.NoError(t, s.Place(".stage-placed", "placed"))
	assert.DirExists(t, s.Dir("placed"))
	assert.NoFileExists(t, filepath.Join(s.Root, ownersName, "placed"))
}

// Rename moves the record with the session; a rename onto a session that exists changes neither.
func TestOwnerFollowsRename(t *testing.T) {
	s := newStore(t)
	_, err := s.Create("p", CreateOptions{Namespace: "a"})
	require.NoError(t, err)
	_, err = s.Create("other", CreateOptions{Namespace: "b"})
	require.NoError(t, err)

	require.NoError(t, s.Rename("p", "q"))
	assert.Equal(t, "a", ownerOf(t, s, "q"))
	assert.NoFileExists(t, filepath.Join(s.Root, ownersName, "p"))
	_, err = s.Create("p", CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "", ownerOf(t, s, "p"), "a new session of the old id has no owner")

	assert.ErrorIs(t, s.Rename("q", "other"), ErrExists)
	assert.Equal(t, "a", ownerOf(t, s, "q"))
	assert.Equal(t, "b", ownerOf(t, s, "other"))
}

// Remove takes the record to the trash with the session: a new session of the id is not the old owner's, a
// restored one is; gc deletes the records of what it deletes.
func TestOwnerThroughTrashAndGC(t *testing.T) {
	s := newStore(t)
	_, err := s.Create("t", CreateOptions{Namespace: "a"})
	require.NoError(t, err)
	trashed, err := s.Remove("t")
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(s.Root, trashedOwnerRel(filepath.Base(trashed))))
	assert.Equal(t, "", ownerOf(t, s, "t"))
	_, err = s.Create("t", CreateOptions{Namespace: "b"})
	require.NoError(t, err)
	assert.Equal(t, "b", ownerOf(t, s, "t"), "another namespace's session of the id is its own")
	_, err = s.RestoreSession("t")
	assert.ErrorIs(t, err, ErrExists)
	assert.Equal(t, "b", ownerOf(t, s, "t"), "a refused restore changes no record")
	_, err = s.Remove("t")
	require.NoError(t, err)

	_, err = s.Create("u", CreateOptions{Namespace: "a"})
	require.NoError(t, err)
	_, err = s.Remove("u")
	require.NoError(t, err)
	_, err = s.RestoreSession("u")
	require.NoError(t, err)
	assert.Equal(t, "a", ownerOf(t, s, "u"), "restored, it keeps its owner")

	_, err = s.Remove("none")
	assert.ErrorIs(t, err, ErrNotFound)

	// An orphan: its trashed session deleted by hand (or by a failed create's cleanup).
	orphan := trashedOwnerRel(trashedName("gone", time.Now()))
	require.NoError(t, os.WriteFile(filepath.Join(s.Root, orphan), []byte("a\n"), 0o600))
	require.NoError(t, s.GC(GCOptions{Trash: true, DryRun: true}))
	assert.FileExists(t, filepath.Join(s.Root, orphan), "a dry run deletes nothing")
	require.NoError(t, s.GC(GCOptions{Trash: true}))
	left, err := os.ReadDir(filepath.Join(s.Root, ownersName, ownersTrash))
	require.NoError(t, err)
	assert.Empty(t, left, "gc deleted the trashed sessions' records")
	assert.Equal(t, "a", ownerOf(t, s, "u"), "a live session's record stays")
}

// The store's root is trusted, but a link, a FIFO or junk where a record lives is refused, never followed nor
// opened; a record written over a link replaces it.
func TestOwnerRecordIsNeverFollowed(t *testing.T) {
	s := newStore(t)
	outside := filepath.Join(t.TempDir(), "ns")
	require.NoError(t, os.WriteFile(outside, []byte("a\n"), 0o644))
	_, err := s.Create("l", CreateOptions{})
	require.NoError(t, err)
	rec := filepath.Join(s.Root, ownersName, "l")

	require.NoError(t, os.Symlink(outside, rec))
	_, err = s.Namespace("l")
	assert.ErrorIs(t, err, ErrDamaged, "a link is not followed: %v", err)

	require.NoError(t, os.Remove(rec))
	require.NoError(t, unix.Mkfifo(rec, 0o600))
	_, err = s.Namespace("l")
	assert.ErrorIs(t, err, ErrDamaged, "a FIFO is not opened: %v", err)

	require.NoError(t, os.Remove(rec))
	require.NoError(t, os.WriteFile(rec, []byte("../b\n"), 0o600))
	_, err = s.Namespace("l")
	assert.ErrorIs(t, err, ErrDamaged, "not a namespace's name: %v", err)

	// The owners folder itself a link.
	require.NoError(t, os.Remove(rec))
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "l"), []byte("a\n"), 0o644))
	owners := filepath.Join(s.Root, ownersName)
	require.NoError(t, os.Rename(owners, owners+".real"))
	require.NoError(t, os.Symlink(dir, owners))
	_, err = s.Namespace("l")
	assert.ErrorIs(t, err, ErrDamaged, "the owners folder as a link is not followed: %v", err)
	require.NoError(t, os.Remove(owners))
	require.NoError(t, os.Rename(owners+".real", owners))

	// Created over a link left where its record goes: the link is replaced, its target untouched.
	require.NoError(t, os.Symlink(outside, filepath.Join(owners, "w")))
	_, err = s.Create("w", CreateOptions{Namespace: "b"})
	require.NoError(t, err)
	assert.Equal(t, "b", ownerOf(t, s, "w"))
	b, err := os.ReadFile(outside)
	require.NoError(t, err)
	assert.Equal(t, "a\n", string(b))
}
