package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Flags a backend does not take are refused, not ignored; a local run on an unmounted store says so, as exec
// does; a profile's conversations and credentials are not copied into new sessions.
func TestRunFlagsAndProfile(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	for _, args := range [][]string{
		{"run", "--timeout", "1m", "s1", "--", "true"},
		{"run", "--image", "x", "s1", "--", "true"},
		{"run", "--backend", "docker", "--timeout", "1m", "--image", "x", "s1", "--", "true"},
		{"run", "--backend", "modal", "--strict", "--image", "x", "s1", "--", "true"},
	} {
		r := cli(t, store, args...)
		assert.Equal(t, 125, r.code, "%v", args)
		assert.Contains(t, r.stderr, "applies to --backend", "%v", args)
	}
	r := cli(t, store, "run", "s1", "--", "true")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stderr, "not mounted")

	prof := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(prof, "CLAUDE.md"), []byte("be nice"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(prof, "projects", "-home-me"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(prof, "projects", "-home-me", "a.jsonl"), []byte("{}\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(prof, ".credentials.json"), []byte("{}"), 0o600))
	ok(t, store, "new", "p1", "--profile", prof)
	claudeDir := filepath.Join(store, "sessions", "p1", ".claude")
	assert.FileExists(t, filepath.Join(claudeDir, "CLAUDE.md"))
	assert.NoFileExists(t, filepath.Join(claudeDir, ".credentials.json"))
	assert.NoDirExists(t, filepath.Join(claudeDir, "projects", "-home-me"))
	r = cli(t, store, "new", "p2", "--profile", filepath.Join(prof, "missing"))
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, filepath.Join(prof, "missing"))
}
