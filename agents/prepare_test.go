package agents_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/agentstest"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/agents/codex"
	"github.com/sessionfs/sessionfs/agents/gemini"
	"github.com/sessionfs/sessionfs/agents/qwen"
)

func TestPrepareMakesTheFolder(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	for _, a := range []*agents.Agent{codex.Agent, qwen.Agent} {
		require.NoError(t, agents.Prepare(sess, a, nil))
		st, err := os.Lstat(filepath.Join(root, a.Dir))
		require.NoError(t, err)
		assert.True(t, st.IsDir())
		require.NoError(t, agents.Prepare(sess, a, nil), "again: nothing changes")
	}
	require.NoError(t, agents.Prepare(sess, claude.Agent, nil))
	_, err := os.Lstat(filepath.Join(root, ".claude"))
	assert.True(t, os.IsNotExist(err), "Claude's folder is package claude's to seed")
}

// Gemini gets trust in the workspaces and the canonical project folder for /session/workspace, as Gemini itself
// would claim it; what the session already has is kept.
func TestPrepareSeedsGemini(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	ws := []string{"/session/workspace", "/mnt/sessions/s/workspace"}
	require.NoError(t, agents.Prepare(sess, gemini.Agent, ws))
	dir := filepath.Join(root, ".gemini")
	assert.Equal(t, map[string]any{"/session/workspace": "TRUST_FOLDER", "/mnt/sessions/s/workspace": "TRUST_FOLDER"},
		agentstest.ReadJSON(t, filepath.Join(dir, "trustedFolders.json")))
	assert.Equal(t, map[string]any{"projects": map[string]any{"/session/workspace": "workspace"}},
		agentstest.ReadJSON(t, filepath.Join(dir, "projects.json")))
	for _, sub := range []string{"tmp", "history"} {
		b, err := os.ReadFile(filepath.Join(dir, sub, "workspace", gemini.Owner))
		require.NoError(t, err)
		assert.Equal(t, "/session/workspace", string(b))
	}

	// The user's own choices stay: a distrusted folder, another cwd holding the name "workspace".
	sess2, root2 := agentstest.OpenSession(t)
	d2 := filepath.Join(root2, ".gemini")
	require.NoError(t, os.MkdirAll(d2, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(d2, "trustedFolders.json"), []byte(`{"/session/workspace":"DO_NOT_TRUST"}`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(d2, "projects.json"), []byte(`{"projects":{"/host/workspace":"workspace"}}`), 0o644))
	require.NoError(t, agents.Prepare(sess2, gemini.Agent, ws))
	assert.Equal(t, "DO_NOT_TRUST", agentstest.ReadJSON(t, filepath.Join(d2, "trustedFolders.json"))["/session/workspace"])
	assert.Equal(t, map[string]any{"/host/workspace": "workspace"}, agentstest.ReadJSON(t, filepath.Join(d2, "projects.json"))["projects"])
	_, err := os.Lstat(filepath.Join(d2, "tmp", "workspace", gemini.Owner))
	assert.True(t, os.IsNotExist(err), "no marker for a name another cwd holds")

	// A hostile registry (a link out, not JSON) is left alone, with an error.
	sess3, root3 := agentstest.OpenSession(t)
	d3 := filepath.Join(root3, ".gemini")
	require.NoError(t, os.MkdirAll(d3, 0o755))
	outside := filepath.Join(t.TempDir(), "secret.json")
	require.NoError(t, os.WriteFile(outside, []byte(`{}`), 0o600))
	require.NoError(t, os.Symlink(outside, filepath.Join(d3, "trustedFolders.json")))
	assert.Error(t, agents.Prepare(sess3, gemini.Agent, ws))
	b, _ := os.ReadFile(outside)
	assert.Equal(t, `{}`, string(b), "nothing written through the link")
	require.NoError(t, os.Remove(filepath.Join(d3, "trustedFolders.json")))
	require.NoError(t, os.WriteFile(filepath.Join(d3, "projects.json"), []byte(`[1]`), 0o644))
	assert.ErrorContains(t, agents.Prepare(sess3, gemini.Agent, ws), "not a JSON object")
}
