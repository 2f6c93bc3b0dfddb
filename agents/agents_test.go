package agents

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/claude"
	"github.com/sessionfs/sessionfs/layout"
)

// The names each CLI gave a cwd in a real run (the pinned versions; see testdata) and in their sources.
func TestFolderNames(t *testing.T) {
	assert.Equal(t, "-tmp-qx-ws", QwenFolder("/tmp/qx/ws"), "qwen 0.24.4 filed /tmp/qx/ws under projects/-tmp-qx-ws")
	assert.Equal(t, "-session-workspace", QwenFolder(CanonicalCwd))
	assert.Equal(t, "-home-u-caf---", QwenFolder("/home/u/café😀"), "one dash a UTF-16 unit (é one, 😀 two), as Claude")
	long := "/" + strings.Repeat("x", 300)
	assert.Len(t, QwenFolder(long), 301, "Qwen never truncates")
	assert.Equal(t, claude.Sanitize("/a/b.c"), QwenFolder("/a/b.c"))

	assert.Equal(t, "ws", GeminiSlug("/tmp/gx/ws"), "gemini 0.61.0 named /tmp/gx/ws's project ws")
	assert.Equal(t, "workspace", GeminiSlug(CanonicalCwd))
	assert.Equal(t, "my-proj-2", GeminiSlug("/home/u/My  Proj_2/"))
	assert.Equal(t, "project", GeminiSlug("/"))
	assert.Equal(t, "project", GeminiSlug("/home/__"))

	assert.Equal(t, "7cd7bd72a8ae38a849b814daa598a9d81a6a1f1928ce2c6e9746d47c45f1df36", PathHash("/tmp/gx/ws"),
		"the projectHash gemini 0.61.0 wrote for /tmp/gx/ws")
}

func TestViewNames(t *testing.T) {
	for _, name := range []string{"workspace", "workspace-1", "ws", "a"} {
		assert.True(t, IsGeminiProject(name), name)
	}
	for _, name := range []string{"", "bin", "background-processes", "Ws", "a.b", "a/b", "..", strings.Repeat("a", 256), PathHash("/x")} {
		assert.False(t, IsGeminiProject(name), name)
	}
	assert.True(t, isHash(PathHash("/session/workspace")))
	assert.False(t, isHash(strings.ToUpper(PathHash("/x"))))
	assert.False(t, isHash("bin"))
	for _, a := range All {
		for _, v := range a.Views {
			assert.True(t, v.Name(v.Canonical), "%s %s: the canonical name is one of the names", a.Name, v.Dir)
		}
	}
	require.Len(t, Claude.Views, 1)
	assert.Equal(t, layout.CanonicalProject, Claude.Views[0].Canonical, "Claude's rule is unchanged")
	assert.True(t, Claude.Views[0].Only)
}

func TestEnvAndNames(t *testing.T) {
	assert.Equal(t, []string{"CODEX_HOME=/session/.codex", "CODEX_SQLITE_HOME=/session/.codex"}, Codex.Env("/session"),
		"a caller's CODEX_SQLITE_HOME would take the index out of the session")
	assert.Equal(t, []string{"QWEN_HOME=/session/.qwen", "QWEN_RUNTIME_DIR=/session/.qwen"}, Qwen.Env("/session"),
		"a caller's QWEN_RUNTIME_DIR would take the chats out of the session")
	assert.Equal(t, []string{"GEMINI_CLI_HOME=/session"}, Gemini.Env("/session"), "the parent of .gemini")
	assert.Equal(t, []string{"CLAUDE_CONFIG_DIR=/m/s/.claude"}, Claude.Env("/m/s"))
	a, err := ByName("")
	require.NoError(t, err)
	assert.Same(t, Claude, a)
	a, err = ByName("gemini")
	require.NoError(t, err)
	assert.Same(t, Gemini, a)
	_, err = ByName("opencode")
	assert.ErrorContains(t, err, "claude, codex, gemini, qwen")
	assert.Same(t, Qwen, ByDir(".qwen"))
	assert.Nil(t, ByDir("workspace"))
}
