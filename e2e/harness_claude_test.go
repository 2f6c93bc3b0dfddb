package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/e2e/apistub"
)

// claudeCLI is one real claude CLI the Claude tests run against, and its version ("2.1.332").
type claudeCLI struct{ path, version string }

// atLeast reports whether the CLI's version is v or newer ("2.1.223").
func (c claudeCLI) atLeast(v string) bool {
	return compareVersions(c.version, v) >= 0
}

func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}

// claudeVersions caches `claude --version` per binary: a CLI start costs about half a second.
var claudeVersions sync.Map

// claudeAt is the CLI at p, which must exist.
func claudeAt(t *testing.T, p string) claudeCLI {
	t.Helper()
	_, err := os.Stat(p)
	need(t, err == nil, "claude CLI: "+p+" is missing (make claude installs it)")
	if v, ok := claudeVersions.Load(p); ok {
		return claudeCLI{p, v.(string)}
	}
	cmd := exec.Command(p, "--version")
	cmd.Env = claudeEnv(t, "http://127.0.0.1:9")
	out, err := cmd.Output()
	require.NoError(t, err, "%s --version", p)
	v, _, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	claudeVersions.Store(p, v)
	return claudeCLI{p, v}
}

// claudeBin is the pinned old claude CLI: $SESSIONFS_CLAUDE (make e2e installs it), else PATH.
func claudeBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SESSIONFS_CLAUDE"); p != "" {
		return claudeAt(t, p).path
	}
	p, err := exec.LookPath("claude")
	need(t, err == nil, "claude CLI not found (make claude installs it; or set SESSIONFS_CLAUDE)")
	return p
}

// forEachClaude runs f as a subtest per pinned claude CLI: the old one ($SESSIONFS_CLAUDE) and the newest
// ($SESSIONFS_CLAUDE_NEW), which differ in how they find conversations (README, "Claude Code versions").
func forEachClaude(t *testing.T, f func(t *testing.T, c claudeCLI)) {
	t.Helper()
	old := claudeAt(t, claudeBin(t))
	t.Run(old.version, func(t *testing.T) { f(t, old) })
	p := os.Getenv("SESSIONFS_CLAUDE_NEW")
	if p == "" {
		t.Run("newest", func(t *testing.T) {
			need(t, false, "the newest claude CLI: set SESSIONFS_CLAUDE_NEW (make claude installs it)")
		})
		return
	}
	newest := claudeAt(t, p)
	t.Run(newest.version, func(t *testing.T) { f(t, newest) })
}

// stub starts the Messages API stub for the test.
func stub(t *testing.T, addr string) *apistub.Server {
	t.Helper()
	s, err := apistub.Start(addr)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// claudeRun runs the real claude CLI offline against the stub, in dir, with the given config dir.
func claudeRun(t *testing.T, claude, api, configDir, dir string, args ...string) (string, error) {
	t.Helper()
	return claudeRunEnv(t, claude, api, []string{"CLAUDE_CONFIG_DIR=" + configDir}, dir, args...)
}

// claudeRunEnv is claudeRun with more environment (CLAUDE_CONFIG_DIR among it).
func claudeRunEnv(t *testing.T, claude, api string, env []string, dir string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, args...)
	cmd.Dir = dir
	cmd.Env = append(claudeEnv(t, api), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// claudeEnv is an offline environment for claude: the stub as the API, a throwaway HOME.
func claudeEnv(t *testing.T, api string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ANTHROPIC_") && !strings.HasPrefix(kv, "CLAUDE_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+t.TempDir(), "ANTHROPIC_BASE_URL="+api, "ANTHROPIC_API_KEY=sk-ant-test",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
}

// claudeSetup gives a test a store holding session s1, and the stub API.
func claudeSetup(t *testing.T) (store string, api *apistub.Server) {
	t.Helper()
	store = t.TempDir()
	ok(t, store, "new", "s1")
	return store, stub(t, "127.0.0.1:0")
}

// transcripts lists the *.jsonl files of a transcript folder.
func transcripts(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	require.NoError(t, err)
	return m
}

func lineCount(t *testing.T, p string) int {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return strings.Count(string(b), "\n")
}
