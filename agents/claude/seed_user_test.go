package claude

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents/agentstest"
)

// userHome makes a home with the given ~/.claude/settings.json and ~/.claude.json ("" leaves one out).
func userHome(t *testing.T, settings, state string) string {
	t.Helper()
	home := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(home, ".claude"), 0o700))
	if settings != "" {
		require.NoError(t, os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(settings), 0o600))
	}
	if state != "" {
		require.NoError(t, os.WriteFile(filepath.Join(home, ".claude.json"), []byte(state), 0o600))
	}
	return home
}

// Only the onboarding and approval keys of ~/.claude.json are taken; settings.json without what gets or holds a
// credential; .credentials.json is never read.
func TestLoadUserStateKeepsAndDrops(t *testing.T) {
	home := userHome(t,
		`{"model":"opus","apiKeyHelper":"/bin/key","env":{"ANTHROPIC_API_KEY":"sk-x","ANTHROPIC_AUTH_TOKEN":"t","DISABLE_TELEMETRY":"1"}}`,
		`{"hasCompletedOnboarding":true,"lastOnboardingVersion":"2.1.332","theme":"light",
		  "customApiKeyResponses":{"approved":["abcdefghij0123456789"],"rejected":[]},
		  "oauthAccount":{"emailAddress":"a@b"},"primaryApiKey":"sk-ant-secret","userID":"u1",
		  "mcpServers":{"x":{"env":{"TOKEN":"t"}}},"projects":{"/home/u/p":{"allowedTools":[]}}}`)
	require.NoError(t, os.WriteFile(filepath.Join(home, ".claude", ".credentials.json"), []byte(`{"secret":1}`), 0o600))
	u, warnings := LoadUserState(home)
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "settings.json (each runs a command, holds a credential or is unknown to sessionfs): apiKeyHelper, env ANTHROPIC_API_KEY, env ANTHROPIC_AUTH_TOKEN")
	assert.ElementsMatch(t, []string{"hasCompletedOnboarding", "lastOnboardingVersion", "theme", "customApiKeyResponses"}, keys(u.State))
	assert.ElementsMatch(t, []string{"model", "env"}, keys(u.Settings))
	assert.JSONEq(t, `{"DISABLE_TELEMETRY":"1"}`, string(u.Settings["env"]))

	// An env of credentials only is dropped whole.
	u, _ = LoadUserState(userHome(t, `{"env":{"ANTHROPIC_API_KEY":"sk"}}`, ""))
	assert.True(t, u.Empty())
}

// Seeding takes an allow list: what only looks or picks a model, and env flags with plain values. Hooks, helpers,
// MCP servers, status lines, permissions, headers, proxies and URLs with credentials stay out, named in one line
// (before, ANTHROPIC_CUSTOM_HEADERS, OTEL headers and a proxy's password were copied into every new session).
func TestLoadUserStateAllowList(t *testing.T) {
	u, warnings := LoadUserState(userHome(t, `{"theme":"dark","outputStyle":"Explanatory","verbose":true,
		"hooks":{"Stop":[]},"statusLine":{"type":"command","command":"x"},"permissions":{"allow":["Bash"]},
		"enabledPlugins":{"p":true},"otelHeadersHelper":"/bin/h","awsAuthRefresh":"aws sso login",
		"env":{"ANTHROPIC_CUSTOM_HEADERS":"Authorization: Bearer gw-token","OTEL_EXPORTER_OTLP_HEADERS":"x=tok",
		"HTTPS_PROXY":"http://u:pw@proxy:3128","ANTHROPIC_BASE_URL":"https://u:pw@gw","NODE_OPTIONS":"--require x",
		"ANTHROPIC_MODEL":"$(id)","DISABLE_TELEMETRY":"1","BASH_MAX_TIMEOUT_MS":600000,"MAX_THINKING_TOKENS":"1024"}}`, ""))
	assert.ElementsMatch(t, []string{"theme", "outputStyle", "verbose", "env"}, keys(u.Settings))
	assert.JSONEq(t, `{"DISABLE_TELEMETRY":"1","BASH_MAX_TIMEOUT_MS":600000,"MAX_THINKING_TOKENS":"1024"}`, string(u.Settings["env"]))
	require.Len(t, warnings, 1)
	assert.True(t, strings.HasSuffix(warnings[0], ": awsAuthRefresh, enabledPlugins, env ANTHROPIC_BASE_URL, "+
		"env ANTHROPIC_CUSTOM_HEADERS, env ANTHROPIC_MODEL, env HTTPS_PROXY, env NODE_OPTIONS, env OTEL_EXPORTER_OTLP_HEADERS, "+
		"hooks, otelHeadersHelper, permissions, statusLine"), warnings[0])
	assert.NotContains(t, warnings[0], "gw-token", "values are never said")
}

// A missing home is nothing; a huge file, a FIFO, a folder or a file that is not a JSON object is left out with a
// warning, never blocking.
func TestLoadUserStateBounds(t *testing.T) {
	u, warnings := LoadUserState(t.TempDir())
	assert.True(t, u.Empty())
	assert.Empty(t, warnings)

	huge := `{"model":"` + strings.Repeat("x", MaxUserSettings) + `"}`
	u, warnings = LoadUserState(userHome(t, huge, `[1,2]`))
	assert.True(t, u.Empty())
	require.Len(t, warnings, 2)
	assert.Contains(t, warnings[0], "more than the")
	assert.Contains(t, warnings[1], "not a JSON object")

	home := userHome(t, "", "")
	require.NoError(t, syscall.Mkfifo(filepath.Join(home, ".claude.json"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(home, ".claude", "settings.json"), 0o700))
	done := make(chan []string, 1)
	go func() { _, w := LoadUserState(home); done <- w }()
	select {
	case w := <-done:
		require.Len(t, w, 2)
		assert.Contains(t, w[0], "not a regular file")
		assert.Contains(t, w[1], "not a regular file")
	case <-time.After(5 * time.Second):
		t.Fatal("reading the user's state blocked on a FIFO")
	}
}

// The user's keys fill what the session lacks; the session's own and sessionfs's seeds win; approvals are added.
func TestSeedUserMergesUnder(t *testing.T) {
	sess, dir := session(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "settings.json"), []byte(`{"model":"sonnet"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".claude.json"),
		[]byte(`{"theme":"dark","customApiKeyResponses":{"approved":["a"],"rejected":["r"]}}`), 0o600))
	u, warnings := LoadUserState(userHome(t, `{"model":"opus","cleanupPeriodDays":7,"hooks":{"Stop":[]}}`,
		`{"theme":"light","hasCompletedOnboarding":true,"customApiKeyResponses":{"approved":["a","b","r"],"rejected":[]}}`))
	require.Len(t, warnings, 1, "hooks are left out, and named")
	require.NoError(t, SeedUser(sess, u))
	require.NoError(t, SeedSettings(sess))

	settings := agentstest.ReadJSON(t, filepath.Join(dir, "settings.json"))
	assert.Equal(t, "sonnet", settings["model"], "the session's own setting wins")
	assert.NotContains(t, settings, "hooks", "a hook of the user's is never copied into a session")
	assert.Equal(t, float64(KeepTranscriptsDays), settings["cleanupPeriodDays"], "sessionfs's seed wins")
	state := agentstest.ReadJSON(t, filepath.Join(dir, ".claude.json"))
	assert.Equal(t, "dark", state["theme"])
	assert.Equal(t, true, state["hasCompletedOnboarding"])
	assert.Equal(t, map[string]any{"approved": []any{"a", "b"}, "rejected": []any{"r"}}, state["customApiKeyResponses"],
		"a key the user approved is approved, one the session rejected stays rejected")
	st, err := os.Stat(filepath.Join(dir, ".claude.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	// A session file that is not a JSON object is left as it is.
	sess2, dir2 := session(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir2, ".claude.json"), []byte(`[`), 0o600))
	assert.ErrorContains(t, SeedUser(sess2, u), "not a JSON object")
	b, _ := os.ReadFile(filepath.Join(dir2, ".claude.json"))
	assert.Equal(t, "[", string(b))
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
