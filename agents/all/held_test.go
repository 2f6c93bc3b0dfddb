package all

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/agents/codex"
	"github.com/sessionfs/sessionfs/layout"
)

func openSession(t *testing.T, dirs ...string) (*layout.Store, *layout.Dir) {
	t.Helper()
	s, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	_, err = s.Create("s", layout.CreateOptions{})
	require.NoError(t, err)
	for _, d := range dirs {
		require.NoError(t, os.MkdirAll(filepath.Join(s.Dir("s"), d), 0o755))
	}
	sess, err := s.OpenSession("s")
	require.NoError(t, err)
	t.Cleanup(func() { sess.Close() })
	return s, sess
}

// Held is the agents whose folders a session holds, and only those; a file named as an agent's folder is none.
func TestHeldIsTheAgentsWhoseFoldersASessionHolds(t *testing.T) {
	s, sess := openSession(t, ".codex/sessions")
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir("s"), ".gemini"), nil, 0o600))
	assert.Equal(t, []string{claude.Agent.Name, codex.Agent.Name}, names(Held(sess))) // new makes .claude
}

// A session's folder of more names than Held reads holds every agent as far as it knows: each looks for its own
// folder then, so a conversation is never missed for a name read past.
func TestHeldOfACrowdedSessionIsEveryAgent(t *testing.T) {
	s, sess := openSession(t)
	for i := range maxSessionTop + 10 {
		require.NoError(t, os.Mkdir(filepath.Join(s.Dir("s"), fmt.Sprintf("a%03d", i)), 0o700))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(s.Dir("s"), ".codex/sessions/2026/01/02"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir("s"),
		".codex/sessions/2026/01/02/rollout-2026-01-02T03-04-05-019a2c1e-7f3d-7c41-9b2e-3f1d0c8e5a7b.jsonl"), []byte("{}\n"), 0o600))
	assert.Equal(t, names(Agents), names(Held(sess)))
	assert.Equal(t, map[string]int{"codex": 1}, Index(sess).ByAgent)
}

func names(as []*agents.Agent) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Name
	}
	return out
}
