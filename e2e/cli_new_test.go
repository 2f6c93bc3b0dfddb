package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/e2e/apistub"
)

// TestShareCredentials: --share-credentials makes the session use the user's credentials file.
func TestShareCredentials(t *testing.T) {
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".claude"), 0o700))
	creds := filepath.Join(home, ".claude", ".credentials.json")
	require.NoError(t, os.WriteFile(creds, []byte(`{"token":"t"}`), 0o600))
	store := t.TempDir()
	r := cliIn(t, store, "", []string{"HOME=" + home}, "new", "s1", "--share-credentials")
	require.Equal(t, 0, r.code, r.stderr)
	target, err := os.Readlink(filepath.Join(store, "sessions", "s1", ".claude", ".credentials.json"))
	require.NoError(t, err)
	assert.Equal(t, creds, target)
	m := mount(t, store)
	b, err := os.ReadFile(filepath.Join(m.session("s1"), ".claude", ".credentials.json"))
	require.NoError(t, err)
	assert.Equal(t, `{"token":"t"}`, string(b))
}

// seedFromUser lets new seed from the HOME a test gives, whatever the environment the tests run in says.
const seedFromUser = "SESSIONFS_NO_USER_SETTINGS=0"

// usersClaude makes a home whose Claude has been through onboarding and approved the stub's API key, with a login
// and an account new must never copy.
func usersClaude(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".claude"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".claude", "settings.json"),
		[]byte(`{"model":"opus","cleanupPeriodDays":5,"apiKeyHelper":"/bin/key","env":{"ANTHROPIC_API_KEY":"sk-env","DISABLE_TELEMETRY":"1"}}`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".claude.json"), []byte(`{"hasCompletedOnboarding":true,
		"lastOnboardingVersion":"2.1.332","theme":"dark","customApiKeyResponses":{"approved":["sk-ant-test"],"rejected":[]},
		"oauthAccount":{"emailAddress":"me@example.com"},"primaryApiKey":"sk-ant-secret","userID":"u1",
		"projects":{"/home/me/secret-project":{}}}`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".claude", ".credentials.json"), []byte(`{"token":"t"}`), 0o600))
	return home
}

// readJSONFile reads the JSON object in p.
func readJSONFile(t *testing.T, p string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m), p)
	return m
}

// TestNewSeedsUsersClaude: a new session takes the user's settings and onboarding state, under sessionfs's own
// seeds, and never their login, account or API keys; --no-user-settings and SESSIONFS_NO_USER_SETTINGS opt out; a
// huge ~/.claude.json is left out with a warning, and new still succeeds.
func TestNewSeedsUsersClaude(t *testing.T) {
	home := usersClaude(t)
	store := t.TempDir()
	r := cliIn(t, store, "", []string{"HOME=" + home, seedFromUser}, "new", "s1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "sessionfs: warning: not copied from "+filepath.Join(home, ".claude", "settings.json")+
		" (each runs a command, holds a credential or is unknown to sessionfs): apiKeyHelper, env ANTHROPIC_API_KEY\n", r.stderr)
	cfg := filepath.Join(store, "sessions", "s1", ".claude")
	state := readJSONFile(t, filepath.Join(cfg, ".claude.json"))
	assert.Equal(t, true, state["hasCompletedOnboarding"])
	assert.Equal(t, "2.1.332", state["lastOnboardingVersion"])
	assert.Equal(t, map[string]any{"approved": []any{"sk-ant-test"}, "rejected": []any{}}, state["customApiKeyResponses"])
	for _, k := range []string{"oauthAccount", "primaryApiKey", "userID"} {
		assert.NotContains(t, state, k)
	}
	assert.NotContains(t, state["projects"], "/home/me/secret-project")
	settings := readJSONFile(t, filepath.Join(cfg, "settings.json"))
	assert.Equal(t, "opus", settings["model"])
	assert.Equal(t, float64(36500), settings["cleanupPeriodDays"], "transcripts are never aged out, whatever the user set")
	assert.NotContains(t, settings, "apiKeyHelper")
	assert.Equal(t, map[string]any{"DISABLE_TELEMETRY": "1"}, settings["env"])
	assert.NoFileExists(t, filepath.Join(cfg, ".credentials.json"))

	for _, c := range []struct {
		id  string
		env []string
		arg []string
	}{{"s2", []string{seedFromUser}, []string{"--no-user-settings"}}, {"s3", []string{"SESSIONFS_NO_USER_SETTINGS=1"}, nil}} {
		r = cliIn(t, store, "", append(c.env, "HOME="+home), append([]string{"new", c.id}, c.arg...)...)
		require.Equal(t, 0, r.code, r.stderr)
		state = readJSONFile(t, filepath.Join(store, "sessions", c.id, ".claude", ".claude.json"))
		assert.NotContains(t, state, "hasCompletedOnboarding", c.id)
		assert.NotContains(t, readJSONFile(t, filepath.Join(store, "sessions", c.id, ".claude", "settings.json")), "model", c.id)
	}

	require.NoError(t, os.Truncate(filepath.Join(home, ".claude.json"), 64<<20))
	r = cliIn(t, store, "", []string{"HOME=" + home, seedFromUser}, "new", "s4")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, ".claude.json left out")
	assert.NotContains(t, readJSONFile(t, filepath.Join(store, "sessions", "s4", ".claude", ".claude.json")), "hasCompletedOnboarding")
}

// TestNewSessionOpensAtThePrompt: the newest claude's TUI, started in a new session of a user who has been
// through onboarding and approved the API key, opens straight at its prompt: no onboarding, no API key dialog.
// Before, every session was a fresh install and stopped at the onboarding's first screen.
func TestNewSessionOpensAtThePrompt(t *testing.T) {
	_, err := exec.LookPath("tmux")
	need(t, err == nil, "tmux is missing (apt-get install tmux): the TUI is interactive only")
	p := os.Getenv("SESSIONFS_CLAUDE_NEW")
	need(t, p != "", "the newest claude CLI: set SESSIONFS_CLAUDE_NEW (make claude installs it)")
	c := claudeAt(t, p)
	home := usersClaude(t)
	store := t.TempDir()
	r := cliIn(t, store, "", []string{"HOME=" + home, seedFromUser}, "new", "s1")
	require.Equal(t, 0, r.code, r.stderr)
	api := stub(t, "127.0.0.1:0")

	env := append(claudeEnv(t, api.URL), "TERM=xterm-256color", "SESSIONFS_STORE="+store)
	tm := startTmux(t, t.TempDir(), env, bin, "exec", "s1", "--", c.path)
	eventually(t, time.Minute, func() bool { return strings.Contains(tm.pane(), "❯") },
		"claude did not open at its prompt: %s", tm.pane())
	time.Sleep(time.Second) // the prompt is drawn before it takes keys
	tm.send("hello there", "Enter")
	eventually(t, time.Minute, func() bool { return strings.Contains(tm.pane(), apistub.Reply) },
		"no reply: claude did not start at its prompt: %s", tm.pane())
	tm.send("C-c")
	tm.send("C-c") // claude exits, and with it the terminal, before the store is removed
	eventually(t, 30*time.Second, func() bool { return exec.Command("tmux", "-S", tm.sock, "has-session").Run() != nil },
		"claude did not exit: %s", tm.pane())
}
