package claude

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readJSON(t *testing.T, p string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

func TestSeedSettingsMergesAndKeeps(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "settings.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"model":"opus","cleanupPeriodDays":7,"hooks":{"x":1}}`), 0o644))
	require.NoError(t, SeedSettings(dir))
	m := readJSON(t, p)
	assert.Equal(t, float64(KeepTranscriptsDays), m["cleanupPeriodDays"])
	assert.Equal(t, "opus", m["model"])
	assert.Equal(t, map[string]any{"x": float64(1)}, m["hooks"])

	// A missing file is created; a larger value is kept.
	dir2 := t.TempDir()
	require.NoError(t, SeedSettings(dir2))
	assert.Equal(t, float64(KeepTranscriptsDays), readJSON(t, filepath.Join(dir2, "settings.json"))["cleanupPeriodDays"])
	require.NoError(t, os.WriteFile(p, []byte(`{"cleanupPeriodDays":99999}`), 0o644))
	require.NoError(t, SeedSettings(dir))
	assert.Equal(t, float64(99999), readJSON(t, p)["cleanupPeriodDays"])
}

func TestSeedSettingsRefusesNonObject(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "settings.json")
	require.NoError(t, os.WriteFile(p, []byte(`[1,2`), 0o644))
	assert.ErrorContains(t, SeedSettings(dir), "not a JSON object")
	b, _ := os.ReadFile(p)
	assert.Equal(t, "[1,2", string(b), "a file we cannot parse is never overwritten")
}

func TestSeedTrust(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ".claude.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"numStartups":3,"projects":{"/a":{"allowedTools":["x"]}}}`), 0o600))
	require.NoError(t, SeedTrust(dir, []string{"/a", "/session/workspace"}))
	m := readJSON(t, p)
	assert.Equal(t, float64(3), m["numStartups"])
	projects := m["projects"].(map[string]any)
	assert.Equal(t, true, projects["/a"].(map[string]any)["hasTrustDialogAccepted"])
	assert.Equal(t, []any{"x"}, projects["/a"].(map[string]any)["allowedTools"])
	assert.Equal(t, true, projects["/session/workspace"].(map[string]any)["hasTrustDialogAccepted"])
	st, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
}

func TestEnv(t *testing.T) {
	env := Env([]string{"PATH=/bin", "CLAUDE_CONFIG_DIR=/old", "A=1"}, "/s/.claude", "A=2", "B=3")
	assert.Equal(t, []string{"PATH=/bin", "CLAUDE_CONFIG_DIR=/s/.claude", "A=2", "B=3"}, env)
}
