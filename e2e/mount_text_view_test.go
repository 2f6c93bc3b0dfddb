package e2e

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The text view (mount/nodes/text.go): <mnt>/conversations/<session>/<agent>/<conversation>.md, every agent's
// conversations rendered as Markdown on read.

// TestTextViewOfEveryAgent: what real Claude, Codex and opencode CLIs said is found by grep -rl through the text
// view, once per conversation; a line the agent appends shows in the view while a reader follows it; a hostile
// transcript's escape sequences reach the reader as text; a container's /session is unchanged.
func TestTextViewOfEveryAgent(t *testing.T) {
	oc := agentCLI(t, "opencode")
	codex := agentCLI(t, "codex")
	claude := claudeBin(t)
	store, m, oapi, ocEnv := opencodeSetup(t)
	api := stub(t, "127.0.0.1:0")
	const needle = "archaeopteryx"
	ws := filepath.Join(m.session("s1"), "workspace")

	out, err := claudeRun(t, claude, api.URL, filepath.Join(m.session("s1"), ".claude"), ws, "-p", "where did the "+needle+" nest")
	require.NoError(t, err, out)
	provider := []string{"-c", `model_provider="stub"`, "-c", `model_providers.stub={name="stub",base_url="` + oapi.URL +
		`",wire_api="responses",env_key="OPENAI_API_KEY",supports_websockets=false}`}
	out, err = agentOutside(t, store, "codex", ws, agentEnv(t, "OPENAI_API_KEY=sk-test"),
		append(append([]string{codex, "exec", "--skip-git-repo-check"}, provider...), "the "+needle+" in codex")...)
	require.NoError(t, err, out)
	r := agentExec(t, store, "opencode", ocEnv, "", oc, "run", "--format", "json", "the "+needle+" in opencode")
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)

	view := filepath.Join(m.mnt, "conversations")
	hits := grepL(t, view, needle)
	var agents []string
	for _, rel := range hits {
		parts := strings.Split(rel, "/")
		require.Len(t, parts, 3, "conversations/<session>/<agent>/<conversation>.md: %s", rel)
		assert.Equal(t, "s1", parts[0])
		assert.True(t, strings.HasSuffix(parts[2], ".md"), rel)
		agents = append(agents, parts[1])
	}
	sort.Strings(agents)
	assert.Equal(t, []string{"claude", "codex", "opencode"}, agents, "each agent's conversation once: %v", hits)
	for _, h := range hits {
		md, err := os.ReadFile(filepath.Join(view, h))
		require.NoError(t, err)
		assert.Contains(t, string(md), "## User")
		assert.Contains(t, string(md), "## Assistant", "%s:\n%s", h, md)
	}

	// Live: a line appended to the Claude transcript shows while a reader holds the file open.
	tr, err := filepath.Glob(filepath.Join(store, "sessions", "s1", ".claude", "projects", "*", "*.jsonl"))
	require.NoError(t, err)
	require.Len(t, tr, 1)
	md := filepath.Join(view, "s1", "claude", strings.TrimSuffix(filepath.Base(tr[0]), ".jsonl")+".md")
	f, err := os.Open(md)
	require.NoError(t, err)
	defer f.Close()
	before, err := os.ReadFile(md)
	require.NoError(t, err)
	_, err = f.Seek(int64(len(before)), 0)
	require.NoError(t, err)
	line := `{"type":"user","message":{"role":"user","content":"a late pterodactyl"},"timestamp":"2026-11-26T02:00:00Z","cwd":"/tmp","sessionId":"x","uuid":"late-1"}` + "\n"
	require.NoError(t, appendLine(tr[0], strings.TrimSuffix(line, "\n")))
	start := time.Now()
	var more []byte
	eventually(t, 3*time.Second, func() bool {
		buf := make([]byte, 4096)
		n, _ := f.Read(buf)
		more = append(more, buf[:n]...)
		return strings.Contains(string(more), "a late pterodactyl")
	}, "the appended prompt read on from where the reader was: %q", more)
	t.Logf("the appended line showed through the held file after %v", time.Since(start).Round(time.Millisecond))
	assert.NotContains(t, string(more), "# claude conversation", "what was read before is not read again")

	// Hostile: an escape sequence meant for the terminal reaches it as text.
	hostile := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace", "11111111-2222-3333-4444-555555555555.jsonl")
	require.NoError(t, os.WriteFile(hostile, []byte(`{"type":"user","message":{"role":"user","content":"\u001b]52;c;cHduZWQ=\u0007\u001b[2J owned"},"timestamp":"2026-11-26T02:00:00Z","sessionId":"11111111-2222-3333-4444-555555555555","uuid":"h1"}`+"\n"), 0o600))
	var shown []byte
	eventually(t, 3*time.Second, func() bool {
		shown, err = os.ReadFile(filepath.Join(view, "s1", "claude", "11111111-2222-3333-4444-555555555555.md"))
		return err == nil
	}, "the hostile conversation in the view: %v", err)
	eventually(t, 3*time.Second, func() bool {
		ents, err := os.ReadDir(filepath.Join(view, "s1", "claude"))
		return err == nil && len(ents) == 2
	}, "a new conversation in the cached listing of its folder")
	assert.NotContains(t, string(shown), "\x1b", "no escape byte reaches the reader")
	assert.Contains(t, string(shown), "owned")

	// Read-only, and not in a session's folder.
	assert.Error(t, os.WriteFile(md, []byte("x"), 0o644))
	_, err = os.Stat(filepath.Join(m.session("s1"), "conversations"))
	assert.True(t, os.IsNotExist(err), "the session's folder (a container's /session) is unchanged: %v", err)
}
