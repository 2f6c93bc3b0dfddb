package session_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/agents/codex"
	"github.com/sessionfs/sessionfs/agents/qwen"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/session"
)

// An agent's folder is made on demand; one the session made a link out of it is refused, and nothing is written
// through it.
func TestPrepareAgent(t *testing.T) {
	s, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	_, err = session.Create(s, "web", session.Options{})
	require.NoError(t, err)
	dir := s.Dir("web")

	warnings, err := session.PrepareAgent(s, "web", codex.Agent, "")
	require.NoError(t, err)
	assert.Empty(t, warnings)
	assert.DirExists(t, filepath.Join(dir, ".codex"))

	outside := t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, ".qwen")))
	_, err = session.PrepareAgent(s, "web", qwen.Agent, "")
	assert.ErrorContains(t, err, "its .qwen is not a folder")
	ents, _ := os.ReadDir(outside)
	assert.Empty(t, ents, "nothing written through the link")

	warnings, err = session.PrepareAgent(s, "web", claude.Agent, "")
	require.NoError(t, err)
	assert.Empty(t, warnings, "Claude's folder is made with the session")
	assert.Empty(t, session.LaunchAgent(s, "web", codex.Agent, dir, ""), "codex has nothing to ready at launch")
}
