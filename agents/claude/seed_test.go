package claude

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents/agentstest"
	"github.com/sessionfs/sessionfs/layout"
)

// session makes a session-like folder with an empty .claude and opens it.
func session(t *testing.T) (*layout.Dir, string) {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(root, ".claude"), 0o755))
	d, err := layout.OpenDir(root)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d, filepath.Join(root, ".claude")
}

func TestSeedSettingsMergesAndKeeps(t *testing.T) {
	sess, dir := session(t)
	p := filepath.Join(dir, "settings.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"model":"opus","cleanupPeriodDays":7,"hooks":{"x":1}}`), 0o644))
	require.NoError(t, SeedSettings(sess))
	m := agentstest.ReadJSON(t, p)
	assert.Equal(t, float64(KeepTranscriptsDays), m["cleanupPeriodDays"])
	assert.Equal(t, "opus", m["model"])
	assert.Equal(t, map[string]any{"x": float64(1)}, m["hooks"])

	// A missing file is created; a larger value is kept.
	sess2, dir2 := session(t)
	require.NoError(t, SeedSettings(sess2))
	assert.Equal(t, float64(KeepTranscriptsDays), agentstest.ReadJSON(t, filepath.Join(dir2, "settings.json"))["cleanupPeriodDays"])
	require.NoError(t, os.WriteFile(p, []byte(`{"cleanupPeriodDays":99999}`), 0o644))
	require.NoError(t, SeedSettings(sess))
	assert.Equal(t, float64(99999), agentstest.ReadJSON(t, p)["cleanupPeriodDays"])
}

func TestSeedSettingsRefusesNonObject(t *testing.T) {
	sess, dir := session(t)
	p := filepath.Join(dir, "settings.json")
	require.NoError(t, os.WriteFile(p, []byte(`[1,2`), 0o644))
	assert.ErrorContains(t, SeedSettings(sess), "not a JSON object")
	b, _ := os.ReadFile(p)
	assert.Equal(t, "[1,2", string(b), "a file we cannot parse is never overwritten")
}

func TestSeedTrust(t *testing.T) {
	sess, dir := session(t)
	p := filepath.Join(dir, ".claude.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"numStartups":3,"projects":{"/a":{"allowedTools":["x"]}}}`), 0o600))
	require.NoError(t, SeedTrust(sess, []string{"/a", "/session/workspace"}))
	m := agentstest.ReadJSON(t, p)
	assert.Equal(t, float64(3), m["numStartups"])
	projects := m["projects"].(map[string]any)
	assert.Equal(t, true, projects["/a"].(map[string]any)["hasTrustDialogAccepted"])
	assert.Equal(t, []any{"x"}, projects["/a"].(map[string]any)["allowedTools"])
	assert.Equal(t, true, projects["/session/workspace"].(map[string]any)["hasTrustDialogAccepted"])
	st, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
}

// A session may make its settings a symlink to a host file, a FIFO, or its .claude a link out: seeding must
// neither follow, nor block, nor write outside the session.
func TestSeedFollowsNothing(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.json")
	require.NoError(t, os.WriteFile(secret, []byte(`{"keep":1}`), 0o600))

	sess, dir := session(t)
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "settings.json")))
	assert.ErrorIs(t, SeedSettings(sess), layout.ErrDamaged)
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, ".claude.json"), 0o644))
	done := make(chan error, 1)
	go func() { done <- SeedTrust(sess, []string{"/x"}) }()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, layout.ErrDamaged)
	case <-time.After(5 * time.Second):
		t.Fatal("seeding blocked on a FIFO")
	}

	sess2, dir2 := session(t)
	require.NoError(t, os.Remove(dir2))
	require.NoError(t, os.Symlink(outside, dir2))
	assert.Error(t, SeedSettings(sess2))
	assert.Error(t, SeedTrust(sess2, []string{"/x"}))

	b, err := os.ReadFile(secret)
	require.NoError(t, err)
	assert.Equal(t, `{"keep":1}`, string(b))
	ents, _ := os.ReadDir(outside)
	assert.Len(t, ents, 1, "nothing written outside the session")
}
