package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/sessionfs/sessionfs/e2e/openaistub"
)

// The other agents' real CLIs (make e2e installs the pinned versions into e2e/.cache), each run offline against a
// stub of its API on 127.0.0.1, through sessionfs exec/env --agent, so their variables are the ones sessionfs
// hands out.

// agentCLI is the real CLI of an agent: $SESSIONFS_<AGENT> (make e2e installs it), else PATH.
func agentCLI(t *testing.T, name string) string {
	t.Helper()
	v := "SESSIONFS_" + strings.ToUpper(name)
	if p := os.Getenv(v); p != "" {
		_, err := os.Stat(p)
		need(t, err == nil, name+" CLI: "+p+" is missing (make "+name+" installs it)")
		return p
	}
	p, err := exec.LookPath(name)
	need(t, err == nil, name+" CLI not found (make "+name+" installs it; or set "+v+")")
	return p
}

// agentEnv is an offline environment for the agents: a throwaway HOME, none of this machine's API settings or
// agent homes, and the given pairs.
func agentEnv(t *testing.T, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME", strings.HasPrefix(k, "OPENAI_"), strings.HasPrefix(k, "GEMINI_"), strings.HasPrefix(k, "GOOGLE_"),
			strings.HasPrefix(k, "QWEN_"), strings.HasPrefix(k, "CODEX_"), strings.HasPrefix(k, "PI_"), strings.HasPrefix(k, "SESSIONFS_"),
			strings.HasPrefix(k, "KIMI_"), strings.HasPrefix(k, "COPILOT_"), k == "GH_TOKEN", k == "GITHUB_TOKEN":
			continue
		}
		env = append(env, kv)
	}
	return append(env, append([]string{"HOME=" + t.TempDir(), "NO_COLOR=1"}, extra...)...)
}

// agentExec runs CMD through "sessionfs exec --agent" (in the session's workspace, or -w DIR), with env.
func agentExec(t *testing.T, store, agent string, env []string, workdir string, argv ...string) result {
	t.Helper()
	args := []string{"exec", "s1", "--agent", agent}
	if workdir != "" {
		args = append(args, "-w", workdir)
	}
	return cliWith(t, store, "", env, nil, append(append(args, "--"), argv...)...)
}

// agentOutside runs argv in dir (a cwd outside the session) with the variables "sessionfs env --agent" prints,
// as a user who evals them would.
func agentOutside(t *testing.T, store, agent, dir string, env []string, argv ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, outsideEnv(t, store, agent, env)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// outsideEnv is env with the variables "sessionfs env --agent" prints for session s1.
func outsideEnv(t *testing.T, store, agent string, env []string) []string {
	t.Helper()
	r := cli(t, store, "env", "s1", "--agent", agent)
	require.Equal(t, 0, r.code, r.stderr)
	env = append([]string{}, env...)
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		kv := strings.TrimPrefix(line, "export ")
		k, v, _ := strings.Cut(kv, "=")
		env = append(env, k+"="+strings.Trim(v, "'"))
	}
	return env
}

// withPath puts the folder of the CLI bin first in env's PATH ("sessionfs resume" runs the agent from PATH).
func withPath(env []string, bin string) []string {
	out := []string{"PATH=" + filepath.Dir(bin) + ":" + os.Getenv("PATH")}
	for _, kv := range env {
		if !strings.HasPrefix(kv, "PATH=") {
			out = append(out, kv)
		}
	}
	return out
}

func lines(t *testing.T, p string) int {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return strings.Count(string(b), "\n")
}

func glob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	require.NoError(t, err)
	return m
}

// findAgent is what "sessionfs find --json" says of a conversation.
func findAgent(t *testing.T, store, id string) (session, agent string) {
	t.Helper()
	var got struct{ Session, Agent string }
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "find", id, "--json")), &got))
	return got.Session, got.Agent
}

// shown lists what "sessionfs show --json" says of the session's conversations: agent/id -> first prompt.
func shownConversations(t *testing.T, store string) map[string]string {
	t.Helper()
	var got struct {
		Conversations []struct {
			Agent, ID   string
			FirstPrompt string `json:"first_prompt"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "show", "s1", "--json")), &got))
	out := map[string]string{}
	for _, c := range got.Conversations {
		out[c.Agent+"/"+c.ID] = c.FirstPrompt
	}
	return out
}

var codexRollout = regexp.MustCompile(`rollout-.*-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$`)

// geminiSetup makes session s1 with Gemini's folder and the settings that pick API-key auth (the stub's base URL
// alone would select Gemini's gateway auth, which a headless run refuses).
func geminiSetup(t *testing.T, store, sessionDir string) {
	t.Helper()
	ok(t, store, "env", "s1", "--agent", "gemini") // makes .gemini, seeded
	require.NoError(t, os.WriteFile(filepath.Join(sessionDir, ".gemini", "settings.json"),
		[]byte(`{"security":{"auth":{"selectedType":"gemini-api-key"}}}`), 0o644))
}

// opencode's real CLI (npm opencode-ai, one compiled binary), offline against e2e/openaistub: a provider of its
// own (@ai-sdk/openai-compatible, bundled in the binary) given as OPENCODE_CONFIG_CONTENT, the caller's setting as
// an API key would be, and none of its downloads (models list, updates, LSPs).

// opencodeEnv is the offline environment for opencode against the stub at url.
func opencodeEnv(t *testing.T, url string) []string {
	cfg := fmt.Sprintf(`{"$schema":"https://opencode.ai/config.json","autoupdate":false,"share":"disabled",`+
		`"enabled_providers":["stub"],"model":"stub/stub-model","small_model":"stub/stub-model",`+
		`"provider":{"stub":{"npm":"@ai-sdk/openai-compatible","name":"stub","options":{"baseURL":%q,"apiKey":"sk-test"},`+
		`"models":{"stub-model":{"name":"stub"}}}}}`, url)
	return agentEnv(t, "OPENCODE_CONFIG_CONTENT="+cfg, "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_SHARE=1", "NO_PROXY=127.0.0.1,localhost")
}

// opencodeSeed gives the session's opencode config folder the package files opencode would otherwise make with a
// background "npm install @opencode-ai/plugin" (the network), as a config folder it set up before has them.
func opencodeSeed(t *testing.T, sessionDir string) {
	t.Helper()
	opencodeSeedConfig(t, filepath.Join(sessionDir, ".opencode", "config"))
}

// opencodeSeedConfig seeds the opencode folder of the config folder xdg (XDG_CONFIG_HOME) as opencodeSeed does.
func opencodeSeedConfig(t *testing.T, xdg string) {
	t.Helper()
	cfg := filepath.Join(xdg, "opencode")
	require.NoError(t, os.MkdirAll(filepath.Join(cfg, "node_modules"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cfg, "package.json"), []byte(`{"dependencies":{"@opencode-ai/plugin":"1.18.33"}}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(cfg, "package-lock.json"),
		[]byte(`{"lockfileVersion":3,"packages":{"":{"dependencies":{"@opencode-ai/plugin":"1.18.33"}}}}`), 0o644))
}

// opencodeSessions reads opencode's database in the store: each conversation (top-level session) with its
// directory and its number of messages.
func opencodeSessions(t *testing.T, store string) map[string]opencodeSession {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(store, "sessions", "s1", ".opencode", "data", "opencode", "opencode.db")+"?mode=ro")
	require.NoError(t, err)
	defer db.Close()
	rows, err := db.Query(`SELECT id, directory, (SELECT count(*) FROM message m WHERE m.session_id = s.id) FROM session s WHERE parent_id IS NULL`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]opencodeSession{}
	for rows.Next() {
		var id string
		var s opencodeSession
		require.NoError(t, rows.Scan(&id, &s.dir, &s.messages))
		out[id] = s
	}
	return out
}

type opencodeSession struct {
	dir      string
	messages int
}

// only returns the one conversation of sessions.
func only(t *testing.T, sessions map[string]opencodeSession) (string, opencodeSession) {
	t.Helper()
	require.Len(t, sessions, 1, "one conversation: %v", sessions)
	for id, s := range sessions {
		return id, s
	}
	panic("unreachable")
}

// opencodeIDs are the opencode session ids of "opencode run --format json" output, one JSON event a line.
func opencodeIDs(out string) []string {
	seen := map[string]bool{}
	var ids []string
	for _, line := range strings.Split(out, "\n") {
		var ev struct{ SessionID string }
		if json.Unmarshal([]byte(line), &ev) == nil && ev.SessionID != "" && !seen[ev.SessionID] {
			seen[ev.SessionID] = true
			ids = append(ids, ev.SessionID)
		}
	}
	return ids
}

// opencodeSetup makes session s1, mounts the store, starts the provider stub and seeds opencode's settings for
// it: what every opencode test starts from.
func opencodeSetup(t *testing.T) (store string, m *mounted, api *openaistub.Server, env []string) {
	t.Helper()
	store = t.TempDir()
	ok(t, store, "new", "s1")
	m = mount(t, store)
	api, err := openaistub.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { api.Close() })
	opencodeSeed(t, m.session("s1"))
	return store, m, api, opencodeEnv(t, api.URL)
}

// runCmd runs argv in dir with env (two minutes at most) and returns its combined output.
func runCmd(dir string, env []string, argv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// pageShows checks the page (sessionfs ui) of session s1: its session page lists the agent's conversation id, and
// the conversation's own page holds every word of words.
func pageShows(t *testing.T, store, agent, id string, words ...string) {
	t.Helper()
	u := startUI(t, store)
	resp, body := u.get(t, "/s/s1")
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), id, "the session's page lists the %s conversation", agent)
	resp, body = u.get(t, "/s/s1/c/"+agent+"/"+id)
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	for _, w := range words {
		assert.Contains(t, string(body), w, "the conversation's page")
	}
}

// logInOrder checks that sessionfs log of session s1's conversations of agent shows each of said, in order.
func logInOrder(t *testing.T, store, agent string, said ...string) {
	t.Helper()
	shown := ok(t, store, "log", "s1", "--agent", agent)
	at := -1
	for _, s := range said {
		i := strings.Index(shown, s)
		assert.Greater(t, i, at, "log shows %q in order:\n%s", s, shown)
		at = i
	}
}

// readWhole checks that conversation id of agent in session s1 is read whole: each of words is found by search in
// it alone, and is in its text view (on mount m) and on its page.
func readWhole(t *testing.T, store string, m *mounted, agent, id string, words ...string) {
	t.Helper()
	md, err := os.ReadFile(filepath.Join(m.mnt, "conversations", "s1", agent, id+".md"))
	require.NoError(t, err)
	for _, word := range words {
		hits := searchJSON(t, store, word)
		require.Len(t, hits, 1, word)
		assert.Equal(t, agent+"/"+id, hits[0].Agent+"/"+hits[0].Conversation, word)
		assert.Contains(t, string(md), word, "the text view")
	}
	pageShows(t, store, agent, id, words...)
}
