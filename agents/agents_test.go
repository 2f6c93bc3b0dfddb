package agents_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/agents/codex"
	"github.com/sessionfs/sessionfs/agents/gemini"
	"github.com/sessionfs/sessionfs/agents/opencode"
	"github.com/sessionfs/sessionfs/agents/qwen"
	"github.com/sessionfs/sessionfs/layout"
)

// The names each CLI gave a cwd in a real run (the pinned versions; see testdata) and in their sources.
func TestFolderNames(t *testing.T) {
	assert.Equal(t, "-tmp-qx-ws", qwen.Folder("/tmp/qx/ws"), "qwen 0.24.4 filed /tmp/qx/ws under projects/-tmp-qx-ws")
	assert.Equal(t, "-session-workspace", qwen.Folder(agents.CanonicalCwd))
	assert.Equal(t, "-home-u-caf---", qwen.Folder("/home/u/café😀"), "one dash a UTF-16 unit (é one, 😀 two), as claude.Agent")
	long := "/" + strings.Repeat("x", 300)
	assert.Len(t, qwen.Folder(long), 301, "qwen.Agent never truncates")
	assert.Equal(t, claude.Sanitize("/a/b.c"), qwen.Folder("/a/b.c"))

	assert.Equal(t, "ws", gemini.Slug("/tmp/gx/ws"), "gemini 0.61.0 named /tmp/gx/ws's project ws")
	assert.Equal(t, "workspace", gemini.Slug(agents.CanonicalCwd))
	assert.Equal(t, "my-proj-2", gemini.Slug("/home/u/My  Proj_2/"))
	assert.Equal(t, "project", gemini.Slug("/"))
	assert.Equal(t, "project", gemini.Slug("/home/__"))

	assert.Equal(t, "7cd7bd72a8ae38a849b814daa598a9d81a6a1f1928ce2c6e9746d47c45f1df36", agents.PathHash("/tmp/gx/ws"),
		"the projectHash gemini 0.61.0 wrote for /tmp/gx/ws")
}

func TestViewNames(t *testing.T) {
	for _, name := range []string{"workspace", "workspace-1", "ws", "a"} {
		assert.True(t, gemini.IsProject(name), name)
	}
	for _, name := range []string{"", "bin", "background-processes", "Ws", "a.b", "a/b", "..", strings.Repeat("a", 256), agents.PathHash("/x")} {
		assert.False(t, gemini.IsProject(name), name)
	}
	assert.True(t, agents.IsHash(agents.PathHash("/session/workspace")))
	assert.False(t, agents.IsHash(strings.ToUpper(agents.PathHash("/x"))))
	assert.False(t, agents.IsHash("bin"))
	for _, a := range all.Agents {
		for _, v := range a.Views {
			assert.True(t, v.Name(v.Canonical), "%s %s: the canonical name is one of the names", a.Name, v.Dir)
		}
	}
	require.Len(t, claude.Agent.Views, 1)
	assert.Equal(t, layout.CanonicalProject, claude.Agent.Views[0].Canonical, "claude.Agent's rule is unchanged")
	assert.True(t, claude.Agent.Views[0].Only)
}

func TestEnvAndNames(t *testing.T) {
	assert.Equal(t, []string{"CODEX_HOME=/session/.codex", "CODEX_SQLITE_HOME=/session/.codex"}, codex.Agent.Env("/session"),
		"a caller's CODEX_SQLITE_HOME would take the index out of the session")
	assert.Equal(t, []string{"QWEN_HOME=/session/.qwen", "QWEN_RUNTIME_DIR=/session/.qwen"}, qwen.Agent.Env("/session"),
		"a caller's QWEN_RUNTIME_DIR would take the chats out of the session")
	assert.Equal(t, []string{"GEMINI_CLI_HOME=/session"}, gemini.Agent.Env("/session"), "the parent of .gemini")
	assert.Equal(t, []string{"CLAUDE_CONFIG_DIR=/m/s/.claude"}, claude.Agent.Env("/m/s"))
	a, err := all.ByName("")
	require.NoError(t, err)
	assert.Same(t, claude.Agent, a)
	a, err = all.ByName("gemini")
	require.NoError(t, err)
	assert.Same(t, gemini.Agent, a)
	assert.Equal(t, []string{"XDG_DATA_HOME=/session/.opencode/data", "XDG_CONFIG_HOME=/session/.opencode/config",
		"XDG_STATE_HOME=/session/.opencode/state", "OPENCODE_DB=/session/.opencode/data/opencode/opencode.db"},
		opencode.Agent.Env("/session"), "opencode's XDG folders, each its own below .opencode")
	a, err = all.ByName("opencode")
	require.NoError(t, err)
	assert.Same(t, opencode.Agent, a)
	_, err = all.ByName("aider")
	assert.ErrorContains(t, err, "claude, codex, gemini, qwen, opencode")
	assert.Same(t, qwen.Agent, all.ByDir(".qwen"))
	assert.Nil(t, all.ByDir("workspace"))
}

func TestSessionEnv(t *testing.T) {
	env := agents.SessionEnv([]string{"PATH=/bin", "CLAUDE_CONFIG_DIR=/old", "A=1"}, "web", "/s", nil, "A=2", "B=3")
	assert.Equal(t, []string{"PATH=/bin", "CLAUDE_CONFIG_DIR=/s/.claude", "A=2", "SESSIONFS_SESSION=web", "SESSION_DIR=/s",
		"CLAUDE_CODE_PROJECT_DIR_NAME=-session-workspace", "B=3"}, env)
	assert.Equal(t, []string{"SESSIONFS_SESSION=web", "SESSION_DIR=/session", "CLAUDE_CONFIG_DIR=/session/.claude",
		"CLAUDE_CODE_PROJECT_DIR_NAME=-session-workspace"}, agents.SessionEnv(nil, "web", "/session", claude.Agent),
		"Claude's variables once")
	assert.Equal(t, []string{"SESSIONFS_SESSION=web", "SESSION_DIR=/session", "CLAUDE_CONFIG_DIR=/session/.claude",
		"CLAUDE_CODE_PROJECT_DIR_NAME=-session-workspace", "CODEX_HOME=/session/.codex", "CODEX_SQLITE_HOME=/x"},
		agents.SessionEnv(nil, "web", "/session", codex.Agent, "CODEX_SQLITE_HOME=/x"), "the agent's, then the user's")
}
