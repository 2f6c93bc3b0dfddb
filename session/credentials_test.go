package session_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/session"
)

// new --share-credentials is recorded beyond the session's reach: a docker run binds the user's file, Modal
// warns, and neither a link the session planted nor a later session at the same id gets the login.
func TestSharedCredentials(t *testing.T) {
	home := fakeHome(t)
	creds := filepath.Join(home, ".claude", ".credentials.json")
	require.NoError(t, os.WriteFile(creds, []byte(`{"claudeAiOauth":{}}`), 0o600))
	s, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	for _, id := range []string{"shared", "planted"} {
		_, err = session.Create(s, id, session.Options{})
		require.NoError(t, err)
	}
	warnings, err := session.ShareCredentials(s, "shared")
	require.NoError(t, err)
	assert.Empty(t, warnings)
	target, err := os.Readlink(filepath.Join(s.Dir("shared"), ".claude", ".credentials.json"))
	require.NoError(t, err)
	assert.Equal(t, creds, target)

	bind, warnings := session.CredentialsFor(s, "shared", "docker")
	assert.Equal(t, creds, bind)
	assert.Empty(t, warnings)
	bind, warnings = session.CredentialsFor(s, "shared", "modal")
	assert.Empty(t, bind)
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "not copied into a Modal Sandbox")
	bind, warnings = session.CredentialsFor(s, "shared", "local")
	assert.Empty(t, bind, "a local run follows the link")
	assert.Empty(t, warnings)

	// A session that links the user's file itself, and writes what it likes in session.json, shares nothing.
	require.NoError(t, os.Symlink(creds, filepath.Join(s.Dir("planted"), ".claude", ".credentials.json")))
	bind, warnings = session.CredentialsFor(s, "planted", "docker")
	assert.Empty(t, bind)
	assert.Empty(t, warnings)

	// A session put at the id of one that shared inherits nothing, removed and made again, or renamed there.
	_, err = s.Remove("shared")
	require.NoError(t, err)
	_, err = session.Create(s, "shared", session.Options{})
	require.NoError(t, err)
	bind, _ = session.CredentialsFor(s, "shared", "docker")
	assert.Empty(t, bind)
	_, err = session.ShareCredentials(s, "shared")
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(s.Dir("shared")))
	require.NoError(t, os.Rename(s.Dir("planted"), s.Dir("shared")))
	bind, _ = session.CredentialsFor(s, "shared", "docker")
	assert.Empty(t, bind, "another folder at the id: the record names the folder it was made for")

	// A login not made yet: the run starts without one, and says so.
	_, err = session.ShareCredentials(s, "shared")
	require.NoError(t, err)
	require.NoError(t, os.Remove(creds))
	bind, warnings = session.CredentialsFor(s, "shared", "docker")
	assert.Empty(t, bind)
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "log in with claude once")
}

// A record that is not ours (a link planted in the store by hand) is damage, never followed.
func TestSharedCredentialsRecordDamaged(t *testing.T) {
	fakeHome(t)
	s, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	_, err = session.Create(s, "web", session.Options{})
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(s.Root, "shared-credentials"), 0o700))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(s.Root, "shared-credentials", "web")))
	_, err = session.SharedCredentials(s, "web")
	assert.Error(t, err)
	bind, warnings := session.CredentialsFor(s, "web", "docker")
	assert.Empty(t, bind)
	assert.Len(t, warnings, 1)
}
