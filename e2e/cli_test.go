package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCLIOverTheStore walks new, ls, show, env, exec, rm and gc as a new user would, without a mount.
func TestCLIOverTheStore(t *testing.T) {
	store := t.TempDir()

	id := strings.TrimSpace(ok(t, store, "new"))
	assert.Regexp(t, `^\d{8}-\d{6}-[0-9a-f]{6}$`, id, "a generated id")
	ok(t, store, "new", "fix-login", "--label", "team=web")
	for _, d := range []string{"app", "workspace", "mcps", ".claude/projects/-session-workspace"} {
		assert.DirExists(t, filepath.Join(store, "sessions", "fix-login", d))
	}
	settings, err := os.ReadFile(filepath.Join(store, "sessions", "fix-login", ".claude", "settings.json"))
	require.NoError(t, err)
	assert.Contains(t, string(settings), `"cleanupPeriodDays": 36500`)

	out := ok(t, store, "ls")
	assert.Contains(t, out, "fix-login")
	assert.Contains(t, out, "team=web")
	assert.Contains(t, out, id)
	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "ls", "--json")), &rows))
	assert.Len(t, rows, 2)

	show := ok(t, store, "show", "fix-login")
	assert.Contains(t, show, filepath.Join(store, "sessions", "fix-login"))
	assert.Contains(t, show, "/session/workspace")
	var shown map[string]any
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "show", "fix-login", "--json")), &shown))
	assert.Equal(t, "fix-login", shown["id"])

	env := ok(t, store, "env", "fix-login")
	assert.Contains(t, env, "export CLAUDE_CONFIG_DIR='"+filepath.Join(store, "sessions", "fix-login", ".claude")+"'")
	assert.Contains(t, ok(t, store, "env", "fix-login", "--container"), "export CLAUDE_CONFIG_DIR='/session/.claude'")
	// The export lines work in a real shell.
	sh := exec.Command("sh", "-c", ok(t, store, "env", "fix-login")+`echo "$CLAUDE_CONFIG_DIR"`)
	got, err := sh.Output()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(store, "sessions", "fix-login", ".claude"), strings.TrimSpace(string(got)))

	// exec: cwd is the workspace, CLAUDE_CONFIG_DIR is the session's, and the exit code comes back.
	r := cli(t, store, "exec", "fix-login", "--", "sh", "-c", `pwd; echo "$CLAUDE_CONFIG_DIR"; echo hi > made.txt; exit 7`)
	assert.Equal(t, 7, r.code)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 2)
	assert.Equal(t, filepath.Join(store, "sessions", "fix-login", "workspace"), lines[0])
	assert.Equal(t, filepath.Join(store, "sessions", "fix-login", ".claude"), lines[1])
	assert.FileExists(t, filepath.Join(store, "sessions", "fix-login", "workspace", "made.txt"))
	assert.Contains(t, r.stderr, "not mounted", "exec says when aliases do not apply")
	meta, err := os.ReadFile(filepath.Join(store, "sessions", "fix-login", "session.json"))
	require.NoError(t, err)
	assert.Contains(t, string(meta), `"exit_code": 7`, "the run is recorded")
	assert.Equal(t, 127, cli(t, store, "exec", "fix-login", "--", "no-such-command-xyz").code)

	// rm moves to the trash; gc --trash deletes for good.
	assert.Contains(t, ok(t, store, "rm", "fix-login"), "trash")
	assert.NotContains(t, ok(t, store, "ls"), "fix-login")
	trash := trashedSessions(t, store)
	require.Len(t, trash, 1)
	assert.FileExists(t, filepath.Join(store, "trash", trash[0].Name(), "workspace", "made.txt"))
	assert.Contains(t, ok(t, store, "gc", "--trash", "--dry-run"), "would delete")
	assert.Len(t, trashedSessions(t, store), 1, "a dry run deletes nothing")
	ok(t, store, "gc", "--trash")
	assert.Empty(t, trashedSessions(t, store))

	assert.Regexp(t, `^sessionfs \S+\n$`, ok(t, store, "version"))
}

// TestCLIErrors checks that bad input gets one clear line and a non-zero exit, and loses nothing.
func TestCLIErrors(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "keep")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"new", "../escape"}, "invalid session id"},
		{[]string{"new", "a/b"}, "invalid session id"},
		{[]string{"new", strings.Repeat("x", 4096)}, "invalid session id"},
		{[]string{"new", "keep"}, "already exists"},
		{[]string{"show", "missing"}, `no such session`},
		{[]string{"rm", "missing"}, `no such session`},
		{[]string{"exec", "missing", "--", "true"}, `no such session`},
		{[]string{"env", "bad id"}, "invalid session id"},
		{[]string{"gc"}, "--trash"},
		{[]string{"new", "x", "--label", "novalue"}, "KEY=VALUE"},
	}
	for _, tt := range tests {
		r := cli(t, store, tt.args...)
		assert.NotEqual(t, 0, r.code, "%v", tt.args)
		assert.Contains(t, r.stderr, tt.want, "%v", tt.args)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, "one line for %v: %q", tt.args, r.stderr)
		assert.NotContains(t, r.stderr, "goroutine", "no stack traces")
	}
	assert.DirExists(t, filepath.Join(store, "sessions", "keep", "workspace"), "nothing already there is lost")
	assert.NoDirExists(t, filepath.Join(filepath.Dir(store), "escape"))
}

// TestCLIReadOnlyStore: a store on a read-only filesystem gives one clear line.
func TestCLIReadOnlyStore(t *testing.T) {
	need(t, os.Geteuid() == 0, "a read-only bind mount needs root")
	store := t.TempDir()
	ok(t, store, "new", "keep")
	require.NoError(t, exec.Command("mount", "--bind", "-o", "ro", store, store).Run())
	t.Cleanup(func() { _ = exec.Command("umount", "-l", store).Run() })
	r := cli(t, store, "new", "more")
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "read-only")
	assert.Contains(t, ok(t, store, "ls"), "keep", "listing still works")
}
