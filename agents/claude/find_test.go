package claude

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/layout"
)

const convo = "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01"

func writeTranscript(t *testing.T, store *layout.Store, id, folder string) {
	t.Helper()
	dir := filepath.Join(store.Dir(id), layout.ProjectsDir, folder)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, convo+".jsonl"), []byte(`{"sessionId":"`+convo+`"}`+"\n"), 0o644))
}

// A uuid written into another session later (a copy, or a planted file in a session whose id sorts first) never
// takes the conversation from the session that made it first; a link planted as a transcript folder is not
// followed; a conversation not yet folded is found.
func TestConversationOwnerIsTheFirstBorn(t *testing.T) {
	store, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	for _, id := range []string{"origin", "aaa-thief", "linker", "unfolded"} {
		_, err := store.Create(id, layout.CreateOptions{})
		require.NoError(t, err)
	}
	writeTranscript(t, store, "unfolded", "-home-me-proj")
	time.Sleep(20 * time.Millisecond)
	writeTranscript(t, store, "origin", layout.CanonicalProject)
	time.Sleep(20 * time.Millisecond)
	writeTranscript(t, store, "aaa-thief", layout.CanonicalProject)
	canon := filepath.Join(store.Dir("linker"), layout.ProjectsDir, layout.CanonicalProject)
	require.NoError(t, os.RemoveAll(canon))
	require.NoError(t, os.Symlink(filepath.Join(store.Dir("origin"), layout.ProjectsDir, layout.CanonicalProject), canon))

	holders, err := Holders(store, convo)
	require.NoError(t, err)
	var ids []string
	for _, h := range holders {
		ids = append(ids, h.ID)
	}
	assert.Equal(t, []string{"unfolded", "origin", "aaa-thief"}, ids, "first born first; the linked folder is not followed")
	assert.Equal(t, layout.ProjectsDir+"/-home-me-proj/"+convo+".jsonl", holders[0].Rel)

	id, err := Find(store, convo)
	require.NoError(t, err)
	assert.Equal(t, "unfolded", id)
	index, err := Index(store)
	require.NoError(t, err)
	assert.Equal(t, "unfolded", index[convo].ID)

	// Once the first is gone, the next born owns it; a thief planting later never does.
	require.NoError(t, os.Remove(filepath.Join(store.Dir("unfolded"), holders[0].Rel)))
	id, err = Find(store, convo)
	require.NoError(t, err)
	assert.Equal(t, "origin", id)
	index, err = Index(store)
	require.NoError(t, err)
	assert.Equal(t, "origin", index[convo].ID)
	assert.True(t, Holds(store, index[convo]))

	_, err = Find(store, "0fe2d21b-be8f-4b12-b46b-12e68f6e9f01")
	assert.ErrorIs(t, err, ErrNoConversation)
	_, err = Find(store, "../x")
	assert.ErrorIs(t, err, ErrNoConversation)
}

// A fork never takes a conversation from its origin, even when its copy is born first (an origin that rewrote its
// transcript, a filesystem with no birth time); a fork of a fork comes after both; forked_from, written by the
// fork itself, only ever gives a conversation away.
func TestForkOriginKeepsTheConversation(t *testing.T) {
	store, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	for _, id := range []string{"origin", "fork", "fork2", "liar"} {
		_, err := store.Create(id, layout.CreateOptions{})
		require.NoError(t, err)
	}
	for _, id := range []string{"fork2", "fork", "origin"} { // born in the wrong order on purpose
		writeTranscript(t, store, id, layout.CanonicalProject)
		time.Sleep(20 * time.Millisecond)
	}
	for id, from := range map[string]string{"fork": "origin", "fork2": "fork"} {
		_, err := store.Update(id, func(m *layout.Meta) error { m.ForkedFrom = from; return nil })
		require.NoError(t, err)
	}
	ids := func() []string {
		holders, err := Holders(store, convo)
		require.NoError(t, err)
		var ids []string
		for _, h := range holders {
			ids = append(ids, h.ID)
		}
		index, err := Index(store)
		require.NoError(t, err)
		assert.Equal(t, ids[0], index[convo].ID, "by-claude-id's index agrees with find")
		return ids
	}
	assert.Equal(t, []string{"origin", "fork", "fork2"}, ids())

	// A session planting the uuid later takes nothing; one claiming to be a fork only gives its own rank away.
	writeTranscript(t, store, "liar", layout.CanonicalProject)
	assert.Equal(t, []string{"origin", "liar", "fork", "fork2"}, ids())
	_, err = store.Update("liar", func(m *layout.Meta) error { m.ForkedFrom = "fork2"; return nil })
	require.NoError(t, err)
	assert.Equal(t, []string{"origin", "fork", "fork2", "liar"}, ids())
	_, err = store.Update("liar", func(m *layout.Meta) error { m.ForkedFrom = ""; return nil })
	require.NoError(t, err)

	// The origin gone, its fork owns the conversation, before the fork's fork.
	require.NoError(t, os.Remove(filepath.Join(store.Dir("origin"), layout.ProjectsDir, layout.CanonicalProject, convo+".jsonl")))
	assert.Equal(t, []string{"fork", "liar", "fork2"}, ids())
}
