package nodes

import (
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/layout"
)

func TestAliasTarget(t *testing.T) {
	tree := &Tree{}
	const projects = "/st/sessions/s/.claude/projects"
	canonical := projects + "/" + layout.CanonicalProject

	target, view, ok := tree.AliasTarget(projects, layout.CanonicalProject)
	assert.True(t, ok)
	assert.Equal(t, canonical, target)
	assert.Zero(t, view, "the canonical folder is not a view: its inode numbers are the store's")

	seen := map[uint64]string{}
	for _, name := range []string{"-home-u-proj", "-session-workspace-sub", "-", "A", strings.Repeat("x", 255)} {
		target, view, ok := tree.AliasTarget(projects, name)
		assert.True(t, ok, name)
		assert.Equal(t, canonical, target, "every Claude folder name leads to the canonical folder")
		assert.NotZero(t, view)
		assert.NotContains(t, seen, view, "views are numbered apart")
		seen[view] = name
		_, again, _ := tree.AliasTarget(projects, name)
		assert.Equal(t, view, again, "a name keeps its number")
	}
	for _, bad := range []string{"", ".", "..", "a.b", "a/b", "é", strings.Repeat("x", 256)} {
		_, _, ok := tree.AliasTarget(projects, bad)
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

// The agents' folders are found by name on the way down from a session, as .claude and its projects folder are.
func TestAgentViewRoles(t *testing.T) {
	sess := &Node{role: roleSession}
	assert.Equal(t, roleClaude, sess.childRole(".claude"), "Claude's rule is the Projects node, as before")
	assert.Equal(t, rolePlain, sess.childRole("workspace"))
	gemini := &Node{role: sess.childRole(".gemini")}
	require.True(t, gemini.role >= roleAgent && gemini.role < roleViews)
	tmp := &Node{role: gemini.childRole("tmp")}
	require.True(t, tmp.role >= roleViews && tmp.role < roleOwnView)
	v := viewFolders[tmp.role-roleViews]
	assert.Equal(t, "gemini", v.agent.Name)
	assert.Equal(t, "workspace", v.Canonical)
	assert.Equal(t, ".project_root", v.Own)
	assert.Equal(t, rolePlain, gemini.childRole("settings.json"))
	assert.Equal(t, rolePlain, tmp.childRole("ws"), "a view is made by lookupView, not by name on the way down")

	qwen := &Node{role: sess.childRole(".qwen")}
	var dirs []string
	for _, name := range []string{"projects", "tmp", "settings.json"} {
		if r := qwen.childRole(name); r >= roleViews && r < roleOwnView {
			dirs = append(dirs, viewFolders[r-roleViews].Dir)
		}
	}
	assert.Equal(t, []string{"projects", "tmp"}, dirs)
	codex := &Node{role: sess.childRole(".codex")}
	assert.Equal(t, rolePlain, codex.childRole("sessions"), "Codex keys nothing by the cwd")
	assert.Equal(t, rolePlain, (&Node{}).childRole(".gemini"), "only a session's own folder")
}

func TestIsSetAside(t *testing.T) {
	const uuid = "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01"
	assert.True(t, isSetAside(uuid+".jsonl", uuid+".jsonl.superseded-1795417231194"))
	assert.True(t, isSetAside(uuid, uuid+".superseded-1"), "the sidecar folder too")
	for _, to := range []string{uuid + ".jsonl.superseded-", uuid + ".jsonl.superseded-12x", uuid + ".jsonl.bak", "x.jsonl.superseded-1"} {
		assert.False(t, isSetAside(uuid+".jsonl", to), to)
	}
}
