package session_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents/agentstest"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/session"
)

// fakeHome makes $HOME a home with a Claude that has been through onboarding and approved an API key.
func fakeHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(home, ".claude"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(`{"model":"opus","cleanupPeriodDays":3}`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".claude.json"),
		[]byte(`{"hasCompletedOnboarding":true,"customApiKeyResponses":{"approved":["k"],"rejected":[]},"oauthAccount":{"x":1}}`), 0o600))
	t.Setenv("HOME", home)
	return home
}

// A session made for the user starts as the user's Claude; SESSIONFS_NO_USER_SETTINGS opts out.
func TestCreateSeedsFromUser(t *testing.T) {
	fakeHome(t)
	t.Setenv(session.NoUserSettingsEnv, "")
	s, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	u, warnings := session.UserClaude()
	require.Empty(t, warnings)
	_, err = session.Create(s, "web", session.Options{User: u, Warn: func(w string) { t.Error(w) }})
	require.NoError(t, err)
	claudeDir := filepath.Join(s.Dir("web"), ".claude")
	settings := agentstest.ReadJSON(t, filepath.Join(claudeDir, "settings.json"))
	assert.Equal(t, "opus", settings["model"])
	assert.Equal(t, float64(36500), settings["cleanupPeriodDays"], "sessionfs's seed wins over the user's")
	state := agentstest.ReadJSON(t, filepath.Join(claudeDir, ".claude.json"))
	assert.Equal(t, true, state["hasCompletedOnboarding"])
	assert.NotContains(t, state, "oauthAccount")
	assert.Contains(t, state, "projects", "the workspaces are trusted as before")

	t.Setenv(session.NoUserSettingsEnv, "1")
	u, _ = session.UserClaude()
	assert.Nil(t, u)
	_, err = session.Create(s, "plain", session.Options{User: u})
	require.NoError(t, err)
	state = agentstest.ReadJSON(t, filepath.Join(s.Dir("plain"), ".claude", ".claude.json"))
	assert.NotContains(t, state, "hasCompletedOnboarding")
}

// A user file past its bound is left out with a warning; the session is made, as a fresh install.
func TestCreateUserFileTooBig(t *testing.T) {
	home := fakeHome(t)
	t.Setenv(session.NoUserSettingsEnv, "")
	f, err := os.OpenFile(filepath.Join(home, ".claude.json"), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(64<<20)) // sparse: NULs past the JSON
	require.NoError(t, f.Close())
	u, warnings := session.UserClaude()
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], ".claude.json left out")
	s, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	_, err = session.Create(s, "web", session.Options{User: u})
	require.NoError(t, err)
	state := agentstest.ReadJSON(t, filepath.Join(s.Dir("web"), ".claude", ".claude.json"))
	assert.NotContains(t, state, "hasCompletedOnboarding")
	assert.Equal(t, "opus", agentstest.ReadJSON(t, filepath.Join(s.Dir("web"), ".claude", "settings.json"))["model"])
}
