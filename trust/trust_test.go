package trust

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/agents/gemini"
	"github.com/sessionfs/sessionfs/agents/qwen"
	"github.com/sessionfs/sessionfs/layout"
)

// newSession is a store holding session s1, with the session's folder.
func newSession(t *testing.T) (*layout.Store, string) {
	t.Helper()
	s, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	_, err = s.Create("s1", layout.CreateOptions{})
	require.NoError(t, err)
	return s, s.Dir("s1")
}

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

func refused(t *testing.T, err error) *Refused {
	t.Helper()
	var r *Refused
	require.True(t, errors.As(err, &r), "want a refusal, got %v", err)
	return r
}

func TestNothingToApprove(t *testing.T) {
	s, dir := newSession(t)
	a := Approvals{Dir: t.TempDir()}
	// What sessionfs seeds and what only changes the look runs nothing: no approval is asked for.
	write(t, dir, ".claude/settings.json", `{"cleanupPeriodDays":36500,"model":"opus","theme":"dark","env":{"DISABLE_TELEMETRY":"1"}}`)
	write(t, dir, ".claude/.claude.json", `{"numStartups":3,"projects":{"/session/workspace":{"hasTrustDialogAccepted":true,"history":[]}}}`)
	write(t, dir, ".codex/config.toml", "model = \"o3\"\n[projects.\"/x\"]\ntrust_level = \"trusted\"\n")
	write(t, dir, ".claude/plugins/store/cc-plugin-agents-md_builtin-b049b47b3618.json", `{}`) // Claude 2.1.332 writes it
	require.NoError(t, Check(s, "s1", "", a))
}

func TestHookNeedsApproval(t *testing.T) {
	s, dir := newSession(t)
	a := Approvals{Dir: t.TempDir()}
	hook := `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch /tmp/pwned"}]}]}}`
	write(t, dir, ".claude/settings.json", hook)
	r := refused(t, Check(s, "s1", "", a))
	require.Len(t, r.Changes, 1)
	assert.Equal(t, ".claude/settings.json", r.Changes[0].Path)
	assert.Equal(t, "new", r.Changes[0].How)
	assert.Contains(t, r.Error(), ".claude/settings.json (hooks): new")
	assert.Contains(t, r.Error(), "sessionfs approve s1")
	assert.Contains(t, r.Error(), "sessionfs exec --landlock s1")

	c, err := ReadSession(s, "s1", "")
	require.NoError(t, err)
	require.NoError(t, a.Approve(s.Root, "s1", c))
	require.NoError(t, Check(s, "s1", "", a), "the approved content runs")
	st, err := os.Stat(a.Dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm(), "approvals are the user's alone")

	// The model changed by /model is no code; a command changed is.
	write(t, dir, ".claude/settings.json", strings.Replace(hook, `{"hooks"`, `{"model":"haiku","hooks"`, 1))
	require.NoError(t, Check(s, "s1", "", a))
	write(t, dir, ".claude/settings.json", strings.Replace(hook, "pwned", "pwned2", 1))
	r = refused(t, Check(s, "s1", "", a))
	assert.Equal(t, "changed since you approved it", r.Changes[0].How)

	// An approval names its store and session: another session with the same content is not approved.
	_, err = s.Create("s2", layout.CreateOptions{})
	require.NoError(t, err)
	write(t, s.Dir("s2"), ".claude/settings.json", hook)
	refused(t, Check(s, "s2", "", a))

	require.NoError(t, a.Revoke(s.Root, "s1"))
	refused(t, Check(s, "s1", "", a))
}

func TestEveryAgentsCode(t *testing.T) {
	for rel, content := range map[string]string{
		".claude/settings.json":                      `{"apiKeyHelper":"/bin/sh -c 'id'"}`,
		".claude/settings.json#env":                  `{"env":{"NODE_OPTIONS":"--require /session/x.js"}}`,
		".claude/settings.json#safe-name-bad-value":  `{"env":{"ANTHROPIC_MODEL":"$(id)"}}`,
		".claude/.claude.json":                       `{"mcpServers":{"x":{"command":"sh"}}}`,
		".claude/.claude.json#project":               `{"projects":{"/h/w":{"mcpServers":{"x":{"command":"sh"}}}}}`,
		".claude/plugins/cache/p/hooks/hooks.json":   `{}`,
		".claude/plugins/installed_plugins.json":     `{"plugins":{}}`,
		"workspace/.claude/settings.json":            `{"statusLine":{"type":"command","command":"id"}}`,
		"workspace/.mcp.json":                        `{"mcpServers":{"x":{"command":"sh"}}}`,
		".codex/config.toml":                         "notify = [\"sh\", \"-c\", \"id\"]\n",
		".codex/.env":                                "X=1\n",
		"workspace/.codex/config.toml":               "[mcp_servers.x]\ncommand = \"sh\"\n",
		".gemini/settings.json":                      `{"tools":{"discoveryCommand":"id"}}`,
		".gemini/.env":                               "NODE_OPTIONS=--require x\n",
		"workspace/.env":                             "NODE_OPTIONS=--require x\n",
		".gemini/extensions/e/gemini-extension.json": `{"mcpServers":{}}`,
		".qwen/settings.json":                        `{"mcpServers":{"x":{"command":"sh"}}}`,
		".opencode/config/opencode/opencode.json":    `{"mcp":{"x":{"type":"local","command":["sh"]}}}`,
		".opencode/config/opencode/plugin/p.js":      `export default async () => ({})`,
		"workspace/.opencode/plugin/p.js":            `export default async () => ({})`,
		".opencode/plugin/p.js":                      `export default async () => ({})`,
		".kimi-code/config.toml":                     "[[hooks]]\nevent = \"SessionStart\"\ncommand = \"id\"\n",
		".kimi-code/tui.toml":                        "theme = \"dark\"\n[status_line]\ncommand = \"id\"\n",
		".kimi-code/mcp.json":                        `{"mcpServers":{"x":{"command":"sh"}}}`,
		"workspace/.kimi-code/mcp.json":              `{"mcpServers":{"x":{"command":"sh"}}}`,
		"workspace/.agents/skills/s/run.sh":          "id\n",
		".copilot/providers.json":                    `{"providers":[{"baseUrl":"http://x","apiKeyCommand":"id"}]}`,
		".copilot/mcp-config.json":                   `{"mcpServers":{"x":{"type":"local","command":"sh"}}}`,
		".copilot/hooks/h.json":                      `{"version":1,"hooks":{"sessionStart":[{"type":"command","bash":"id"}]}}`,
		".copilot/permissions-config.json":           `{"allow":["shell(*)"]}`,
		".copilot/settings.json":                     `{"statusLine":{"type":"command","command":"id"}}`,
		"workspace/.github/lsp.json":                 `{"lspServers":{"x":{"command":"sh"}}}`,
		"workspace/.github/hooks/h.json":             `{"version":1,"hooks":{}}`,
	} {
		t.Run(rel, func(t *testing.T) {
			s, dir := newSession(t)
			path, _, _ := strings.Cut(rel, "#")
			write(t, dir, path, content)
			r := refused(t, Check(s, "s1", "", Approvals{Dir: t.TempDir()}))
			assert.True(t, strings.HasPrefix(path, r.Changes[0].Path), "%s: %v", path, r.Changes)
		})
	}
}

// A project's settings count in every folder of the workspace, not only above the cwd: a shell started in the
// workspace runs claude wherever it cds (the attacker of the change: exec s1 -- sh -c 'cd api && claude' ran
// workspace/api's hook). Installed packages and a repository's objects are not walked.
func TestProjectFilesAnywhereInTheWorkspace(t *testing.T) {
	s, dir := newSession(t)
	a := Approvals{Dir: t.TempDir()}
	write(t, dir, "workspace/node_modules/x/.claude/settings.json", `{"hooks":{"Stop":[]}}`)
	write(t, dir, "workspace/.git/x/.mcp.json", `{"mcpServers":{}}`)
	require.NoError(t, Check(s, "s1", "", a), "node_modules and .git are not walked")
	write(t, dir, "workspace/api/deep/.claude/settings.json", `{"hooks":{"Stop":[]}}`)
	for _, cwd := range []string{"", "workspace/api", "mcps"} {
		r := refused(t, Check(s, "s1", cwd, a))
		require.Len(t, r.Changes, 1, cwd)
		assert.Equal(t, "workspace/api/deep/.claude/settings.json", r.Changes[0].Path, cwd)
	}
	assert.Contains(t, refused(t, Check(s, "s1", "workspace/api", a)).Error(), "sessionfs approve s1 -w /session/workspace/api")
	write(t, dir, "mcps/x/.claude/settings.json", `{"hooks":{"Stop":[]}}`)
	assert.Len(t, refused(t, Check(s, "s1", "mcps/x", a)).Changes, 2, "the cwd's own, outside the workspace, too")
}

// A folder of the workspace that is a link leads a shell's cd to another folder of the session: its settings
// count as the workspace's own do.
func TestProjectFilesThroughALink(t *testing.T) {
	s, dir := newSession(t)
	write(t, dir, "mcps/x/.claude/settings.json", `{"hooks":{"Stop":[]}}`)
	require.NoError(t, os.Symlink("../mcps/x", filepath.Join(dir, "workspace", "api")))
	r := refused(t, Check(s, "s1", "", Approvals{Dir: t.TempDir()}))
	assert.Equal(t, "mcps/x/.claude/settings.json", r.Changes[0].Path)
}

func TestWorkspaceWalkBound(t *testing.T) {
	s, dir := newSession(t)
	defer func(n int) { maxFolders = n }(maxFolders)
	maxFolders = 500
	for i := 0; i <= maxFolders; i++ {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "workspace", itoa(i/100), itoa(i)), 0o755))
	}
	r := refused(t, Check(s, "s1", "", Approvals{Dir: t.TempDir()}))
	assert.Equal(t, "the session's folders", r.Changes[0].Path)
	assert.Contains(t, r.Changes[0].How, "more than 500 folders")
}

func TestWorkspaceEntriesBound(t *testing.T) {
	s, dir := newSession(t)
	defer func(n int) { maxEntries = n }(maxEntries)
	maxEntries = 500
	for i := 0; i <= maxEntries; i++ {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "workspace", itoa(i)), nil, 0o644))
	}
	r := refused(t, Check(s, "s1", "", Approvals{Dir: t.TempDir()}))
	assert.Equal(t, "the session's folders", r.Changes[0].Path)
	assert.Contains(t, r.Changes[0].How, "more than 500 files and folders")
}

func TestLinksCannotBeApproved(t *testing.T) {
	s, dir := newSession(t)
	a := Approvals{Dir: t.TempDir()}
	secret := filepath.Join(t.TempDir(), "settings.json")
	require.NoError(t, os.WriteFile(secret, []byte(`{"hooks":{}}`), 0o644))
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, ".claude", "settings.json")))
	r := refused(t, Check(s, "s1", "", a))
	assert.Contains(t, r.Changes[0].How, "cannot be approved: a link")
	c, err := ReadSession(s, "s1", "")
	require.NoError(t, err)
	assert.ErrorContains(t, a.Approve(s.Root, "s1", c), "cannot be approved")

	// A link inside a plugin folder, and a FIFO as a settings file.
	require.NoError(t, os.Remove(filepath.Join(dir, ".claude", "settings.json")))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".claude", "plugins", "cache"), 0o755))
	require.NoError(t, os.Symlink("/etc", filepath.Join(dir, ".claude", "plugins", "cache", "p")))
	assert.Contains(t, refused(t, Check(s, "s1", "", a)).Changes[0].How, "p is a link")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "workspace", ".claude"), 0o755))
	require.NoError(t, syscallMkfifo(filepath.Join(dir, "workspace", ".claude", "settings.json")))
	r = refused(t, Check(s, "s1", "", a))
	assert.Len(t, r.Changes, 2)
}

func TestTreeBounds(t *testing.T) {
	s, dir := newSession(t)
	for i := 0; i <= maxTreeFiles; i++ {
		write(t, dir, filepath.Join(".claude/skills", "s", strings.Repeat("x", 1+i%7)+string(rune('a'+i%26))+"-"+itoa(i)), "x")
	}
	r := refused(t, Check(s, "s1", "", Approvals{Dir: t.TempDir()}))
	assert.Contains(t, r.Changes[0].How, "more than 4096 entries")
}

func TestTreeChange(t *testing.T) {
	s, dir := newSession(t)
	a := Approvals{Dir: t.TempDir()}
	write(t, dir, ".claude/skills/s/SKILL.md", "---\nname: s\n---\nhello")
	c, err := ReadSession(s, "s1", "")
	require.NoError(t, err)
	require.NoError(t, a.Approve(s.Root, "s1", c))
	require.NoError(t, Check(s, "s1", "", a))
	write(t, dir, ".claude/skills/s/run.sh", "id")
	assert.Equal(t, "changed since you approved it", refused(t, Check(s, "s1", "", a)).Changes[0].How)
}

func syscallMkfifo(p string) error { return unix.Mkfifo(p, 0o644) }

func itoa(i int) string { return strconv.Itoa(i) }

// The login Gemini and Qwen save themselves is no code; the rest of their security settings is.
func TestGeminiSavedLoginIsNoCode(t *testing.T) {
	s, dir := newSession(t)
	a := Approvals{Dir: t.TempDir()}
	write(t, dir, ".gemini/settings.json", `{"security":{"auth":{"selectedType":"gemini-api-key"}},"ui":{"theme":"x"}}`)
	write(t, dir, ".qwen/settings.json", `{"security":{"auth":{"selectedType":"openai"}}}`)
	require.NoError(t, Check(s, "s1", "", a))
	write(t, dir, ".gemini/settings.json", `{"security":{"auth":{"selectedType":"gemini-api-key"},"folderTrust":{"enabled":false}}}`)
	r := refused(t, Check(s, "s1", "", a))
	assert.Equal(t, ".gemini/settings.json (security): new", r.Changes[0].String())
}

// A tree's files are read 64 MiB at most in all, sparse ones too, hashed as they are read.
func TestTreeByteBound(t *testing.T) {
	s, dir := newSession(t)
	for _, name := range []string{"a", "b"} {
		write(t, dir, ".claude/skills/s/"+name, "")
		require.NoError(t, os.Truncate(filepath.Join(dir, ".claude/skills/s/"+name), 40<<20))
	}
	r := refused(t, Check(s, "s1", "", Approvals{Dir: t.TempDir()}))
	assert.Equal(t, ".claude/skills", r.Changes[0].Path)
	assert.Contains(t, r.Changes[0].How, "more than the")
}

// A run points Claude and its own agent at the session: another agent's folder is not read for it (a broken .qwen
// kept gemini from starting), while every agent's project files are.
func TestOnlyTheRunsAgentsFolders(t *testing.T) {
	s, dir := newSession(t)
	a := Approvals{Dir: t.TempDir()}
	write(t, dir, ".qwen/settings.json", `{"mcpServers":{"x":{"command":"sh"}}}`)
	write(t, dir, ".qwen/extensions/extension-enablement.json", `{"x":{"overrides":[]}}`) // Qwen's own
	require.NoError(t, Check(s, "s1", "", a, claude.Agent, gemini.Agent))
	r := refused(t, Check(s, "s1", "", a, claude.Agent, qwen.Agent))
	require.Len(t, r.Changes, 1, "extension-enablement.json is Qwen's own")
	assert.Equal(t, ".qwen/settings.json", r.Changes[0].Path)
	write(t, dir, "workspace/.qwen/settings.json", `{"mcpServers":{"x":{"command":"sh"}}}`)
	assert.Equal(t, "workspace/.qwen/settings.json", refused(t, Check(s, "s1", "", a, claude.Agent)).Changes[0].Path)
}
