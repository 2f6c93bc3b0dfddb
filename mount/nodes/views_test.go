package nodes

import (
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/layout"
)

// The views rule (viewOf) on Claude's row: every name of its alphabet is a view of the canonical folder.
func TestViewOfClaudeRow(t *testing.T) {
	tree := &Tree{}
	claudeRow := rowOf(claude.Agent, "projects")
	require.NotNil(t, claudeRow)
	const projects = "/st/sessions/s/.claude/projects"
	canonical := projects + "/" + layout.CanonicalProject

	v, ok := tree.viewOf(claudeRow, projects, layout.CanonicalProject)
	assert.True(t, ok)
	assert.Equal(t, canonical, v.target)
	assert.Zero(t, v.num, "the canonical folder is not a view: its inode numbers are the store's")

	seen := map[uint64]string{}
	for _, name := range []string{"-home-u-proj", "-session-workspace-sub", "-", "A", strings.Repeat("x", 255)} {
		v, ok := tree.viewOf(claudeRow, projects, name)
		assert.True(t, ok, name)
		assert.Equal(t, canonical, v.target, "every Claude folder name leads to the canonical folder")
		assert.NotZero(t, v.num)
		assert.NotContains(t, seen, v.num, "views are numbered apart")
		seen[v.num] = name
		again, _ := tree.viewOf(claudeRow, projects, name)
		assert.Equal(t, v.num, again.num, "a name keeps its number")
	}
	for _, bad := range []string{"", ".", "..", "a.b", "a/b", "é", strings.Repeat("x", 256)} {
		_, ok := tree.viewOf(claudeRow, projects, bad)
		assert.False(t, ok, "%q", bad)
	}
}

func TestStableAttr(t *testing.T) {
	dir := syscall.Stat_t{Ino: 1234, Mode: syscall.S_IFDIR | 0o755}
	file := syscall.Stat_t{Ino: 99, Mode: syscall.S_IFREG | 0o600}
	assert.Equal(t, uint64(1234), stableAttr(&dir, 1, 0).Ino)
	a, b := stableAttr(&dir, 1, 1).Ino, stableAttr(&dir, 1, 2).Ino
	assert.NotEqual(t, a, b)
	assert.NotEqual(t, uint64(1234), a, "a folder under a view gets its own inode number")
	assert.Equal(t, uint64(99), stableAttr(&file, 1, 7).Ino, "a file is one inode under every view")
	assert.Equal(t, uint32(syscall.S_IFDIR), stableAttr(&dir, 1, 0).Mode)
}

// The agents' folders are found by name on the way down from a session, Claude's .claude and its projects folder
// as the others'.
func TestAgentViewKinds(t *testing.T) {
	sess := &SessionDir{}
	claudeDir, ok := sess.childNode(".claude", "s/.claude", true).(*AgentDir)
	require.True(t, ok)
	projects := rowOf(claudeDir.agent, "projects")
	require.NotNil(t, projects)
	assert.True(t, projects.Only && projects.transcripts, "Claude's rule is the folder of views only, one row of the table")
	assert.Nil(t, claudeDir.childNode("projects", "s/.claude/projects", true), "made by Lookup alone (OnlyViewsDir)")
	assert.Nil(t, sess.childNode("workspace", "s/workspace", true))
	gemini, ok := sess.childNode(".gemini", "s/.gemini", true).(*AgentDir)
	require.True(t, ok)
	tmp, ok := gemini.childNode("tmp", "s/.gemini/tmp", true).(*ViewsDir)
	require.True(t, ok)
	v := tmp.views
	assert.Equal(t, "gemini", v.agent.Name)
	assert.Equal(t, "workspace", v.Canonical)
	assert.Equal(t, ".project_root", v.Own)
	assert.False(t, v.transcripts)
	assert.Nil(t, gemini.childNode("settings.json", "s/.gemini/settings.json", false))
	_, isKind := any(tmp).(parentKind)
	assert.False(t, isKind, "a view is made by ViewsDir.Lookup, not by name on the way down")
	view := &View{Node{row: v}}
	own, ok := view.childNode(".project_root", "s/.gemini/tmp/ws/.project_root", false).(*Node)
	require.True(t, ok)
	assert.Equal(t, "s/.gemini/tmp/ws/.project_root", own.base, "a view's own file is an anchor at its own path")
	assert.Nil(t, view.childNode("chats", "s/.gemini/tmp/workspace/chats", true))

	qwen := sess.childNode(".qwen", "s/.qwen", true).(*AgentDir)
	var dirs []string
	for _, name := range []string{"projects", "tmp", "settings.json"} {
		if d, ok := qwen.childNode(name, "s/.qwen/"+name, true).(*ViewsDir); ok {
			dirs = append(dirs, d.views.Dir)
		}
	}
	assert.Equal(t, []string{"projects", "tmp"}, dirs)
	codex := sess.childNode(".codex", "s/.codex", true).(*AgentDir)
	assert.Nil(t, codex.childNode("sessions", "s/.codex/sessions", true), "Codex keys nothing by the cwd")
	_, isKind = any(&Node{}).(parentKind)
	assert.False(t, isKind, "only a session's own folder")
	assert.Nil(t, claudeDir.childNode(".gemini", "s/.claude/.gemini", true), "only a session's own folder")
}

func TestIsSetAside(t *testing.T) {
	const uuid = "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01"
	assert.True(t, isSetAside(uuid+".jsonl", uuid+".jsonl.superseded-1795417231194"))
	assert.True(t, isSetAside(uuid, uuid+".superseded-1"), "the sidecar folder too")
	for _, to := range []string{uuid + ".jsonl.superseded-", uuid + ".jsonl.superseded-12x", uuid + ".jsonl.bak", "x.jsonl.superseded-1"} {
		assert.False(t, isSetAside(uuid+".jsonl", to), to)
	}
}
