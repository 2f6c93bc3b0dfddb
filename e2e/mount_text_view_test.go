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

	"github.com/sessionfs/sessionfs/e2e/geministub"
)

// The text view (mount/nodes/text.go): <mnt>/conversations/<session>/<agent>/<conversation>.md, every agent's
// conversations rendered as Markdown on read.

// TestTextViewOfEveryAgent: what every agent's real CLI said (both Claude pins, Codex, Gemini, Qwen, opencode) is
// found by grep -rl through the text view, once per conversation, and by sessionfs search; a line the agent
// appends shows in the view while a reader follows it, and in search; a hostile transcript's escape sequences
// reach the reader as text; a container's /session is unchanged.
func TestTextViewOfEveryAgent(t *testing.T) {
	oc := agentCLI(t, "opencode")
	codex := agentCLI(t, "codex")
	gemini := agentCLI(t, "gemini")
	qwen := agentCLI(t, "qwen")
	claude := claudeBin(t)
	newest := os.Getenv("SESSIONFS_CLAUDE_NEW")
	need(t, newest != "", "the newest claude CLI: set SESSIONFS_CLAUDE_NEW (make claude installs it)")
	store, m, oapi, ocEnv := opencodeSetup(t)
	api := stub(t, "127.0.0.1:0")
	const needle = "archaeopteryx"
	ws := filepath.Join(m.session("s1"), "workspace")

	for _, c := range []string{claude, claudeAt(t, newest).path} {
		out, err := claudeRun(t, c, api.URL, filepath.Join(m.session("s1"), ".claude"), ws, "-p", "where did the "+needle+" nest")
		require.NoError(t, err, out)
	}
	provider := []string{"-c", `model_provider="stub"`, "-c", `model_providers.stub={name="stub",base_url="` + oapi.URL +
		`",wire_api="responses",env_key="OPENAI_API_KEY",supports_websockets=false}`}
	out, err := agentOutside(t, store, "codex", ws, agentEnv(t, "OPENAI_API_KEY=sk-test"),
		append(append([]string{codex, "exec", "--skip-git-repo-check"}, provider...), "the "+needle+" in codex")...)
	require.NoError(t, err, out)
	r := agentExec(t, store, "opencode", ocEnv, "", oc, "run", "--format", "json", "the "+needle+" in opencode")
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	gapi, err := geministub.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { gapi.Close() })
	geminiSetup(t, store, m.session("s1"))
	r = agentExec(t, store, "gemini", agentEnv(t, "GEMINI_API_KEY=test", "GOOGLE_GEMINI_BASE_URL="+gapi.URL), "",
		gemini, "-m", "gemini-2.5-flash", "-p", "the "+needle+" in gemini")
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	r = agentExec(t, store, "qwen", agentEnv(t, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+oapi.URL, "OPENAI_MODEL=stub-model"), "",
		qwen, "--auth-type", "openai", "the "+needle+" in qwen")
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	want := []string{"claude", "claude", "codex", "gemini", "opencode", "qwen"}

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
	assert.Equal(t, want, agents, "each agent's conversation once: %v", hits)
	var found []string
	for _, h := range searchJSON(t, store, needle) {
		found = append(found, h.Agent)
	}
	sort.Strings(found)
	assert.Equal(t, want, found, "sessionfs search finds the same")
	for _, h := range hits {
		md, err := os.ReadFile(filepath.Join(view, h))
		require.NoError(t, err)
		assert.Contains(t, string(md), "## User")
		assert.Contains(t, string(md), "## Assistant", "%s:\n%s", h, md)
	}

	// Live: a line appended to the Claude transcript shows while a reader holds the file open.
	tr, err := filepath.Glob(filepath.Join(store, "sessions", "s1", ".claude", "projects", "*", "*.jsonl"))
	require.NoError(t, err)
	require.Len(t, tr, 2, "a conversation of each Claude CLI")
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
	eventually(t, 3*time.Second, func() bool { return len(searchJSON(t, store, "pterodactyl")) == 1 }, "search finds the appended prompt")

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
		return err == nil && len(ents) == 3
	}, "a new conversation in the cached listing of its folder")
	assert.NotContains(t, string(shown), "\x1b", "no escape byte reaches the reader")
	assert.Contains(t, string(shown), "owned")

	// Read-only, and not in a session's folder.
	assert.Error(t, os.WriteFile(md, []byte("x"), 0o644))
	_, err = os.Stat(filepath.Join(m.session("s1"), "conversations"))
	assert.True(t, os.IsNotExist(err), "the session's folder (a container's /session) is unchanged: %v", err)
}
