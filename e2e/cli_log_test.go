package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/e2e/apistub"
	"github.com/sessionfs/sessionfs/e2e/geministub"
	"github.com/sessionfs/sessionfs/e2e/openaistub"
)

// TestLogShowsARealConversation: a conversation of the real claude CLI (a prompt, a subagent it delegated to, a
// resume) printed by sessionfs log as Markdown, found by the session, by its uuid and by the start of it; --json
// gives its entries; what is not there exits 1, as docker logs.
func TestLogShowsARealConversation(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c claudeCLI) {
		store, api := claudeSetup(t)
		cfg := filepath.Join(store, "sessions", "s1", ".claude")
		ws := filepath.Join(store, "sessions", "s1", "workspace")
		out, err := claudeRun(t, c.path, api.URL, cfg, ws, "-p", "needle-of-the-log please "+apistub.AgentTrigger)
		require.NoError(t, err, out)
		uuid := conversationOf(t, store)

		shown := ok(t, store, "log", "s1")
		t.Log("\n" + shown)
		assert.Contains(t, shown, "# claude conversation "+uuid)
		assert.Contains(t, shown, "- Cwd: "+ws)
		assert.Contains(t, shown, "needle-of-the-log please")
		assert.Contains(t, shown, "## Assistant")
		assert.Contains(t, shown, apistub.Reply)
		assert.Contains(t, shown, "- → ", "the delegation is a tool call on one line")
		assert.Contains(t, shown, "> Reply with one word.", "the subagent's conversation, quoted")
		assert.NotContains(t, shown, `{"`, "no JSON")
		assert.NotContains(t, shown, "<task-notification>", "a background subagent's end (2.1.3xx) is a note")
		assert.Equal(t, shown, ok(t, store, "log", uuid))
		assert.Equal(t, shown, ok(t, store, "log", uuid[:8]))
		assert.Equal(t, shown, ok(t, store, "log", "s1", uuid))

		var kinds []string
		for _, line := range strings.Split(strings.TrimSpace(ok(t, store, "log", "s1", "--json")), "\n") {
			var e struct{ Kind, Text, Subagent string }
			require.NoError(t, json.Unmarshal([]byte(line), &e), line)
			kinds = append(kinds, e.Kind)
		}
		assert.Equal(t, "prompt", kinds[0])
		assert.Contains(t, kinds, "tool_call")
		assert.Contains(t, kinds, "reply")

		for _, args := range [][]string{{"log", "no-such"}, {"log", "s1", "0000dead"}, {"log", "s1", "--agent", "codex"}} {
			r := cli(t, store, args...)
			assert.Equal(t, 125, r.code, "%v: %s", args, r.stderr)
			assert.Contains(t, r.stderr, "no such conversation")
		}
	})
}

// TestLogFollowPrintsWhatIsAdded: log -f prints the conversation, then what a resume of the real claude CLI adds
// to it after log started, as it is written; Ctrl-C ends it with status 0.
func TestLogFollowPrintsWhatIsAdded(t *testing.T) {
	claude := claudeBin(t)
	store, api := claudeSetup(t)
	cfg := filepath.Join(store, "sessions", "s1", ".claude")
	ws := filepath.Join(store, "sessions", "s1", "workspace")
	out, err := claudeRun(t, claude, api.URL, cfg, ws, "-p", "first words")
	require.NoError(t, err, out)
	uuid := conversationOf(t, store)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "log", "-f", "s1")
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	await := func(want string) {
		t.Helper()
		for lines.Scan() {
			if strings.Contains(lines.Text(), want) {
				return
			}
		}
		require.FailNow(t, "log -f ended before printing "+want, "%v", lines.Err())
	}
	await("first words")

	out, err = claudeRun(t, claude, api.URL, cfg, ws, "-p", "--resume", uuid, "words added while following")
	require.NoError(t, err, out)
	await("words added while following")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.NoError(t, cmd.Wait(), "Ctrl-C ends log -f with status 0")
}

// conversationOf is the uuid of the one Claude conversation of session s1.
func conversationOf(t *testing.T, store string) string {
	t.Helper()
	var show struct {
		Conversations []struct{ ID string }
	}
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "show", "s1", "--json")), &show))
	require.Len(t, show.Conversations, 1)
	return show.Conversations[0].ID
}

// TestLogEveryAgent: a conversation of each other agent's real CLI (Codex, Gemini CLI, Qwen Code, Kimi Code, Copilot CLI, opencode: its
// rows read through the untrusted reader) printed by sessionfs log, by --agent and by its id.
func TestLogEveryAgent(t *testing.T) {
	const needle = "needle-for-log"
	for _, tc := range []struct {
		agent string
		reply string
		run   func(t *testing.T, store, cli string, m *mounted) (env []string, argv []string)
	}{
		{"codex", openaistub.Reply, func(t *testing.T, store, cli string, _ *mounted) ([]string, []string) {
			api := openaiStub(t)
			return agentEnv(t, "OPENAI_API_KEY=sk-test"), []string{cli, "exec", "--skip-git-repo-check", "-c", `model_provider="stub"`,
				"-c", `model_providers.stub={name="stub",base_url="` + api.URL + `",wire_api="responses",env_key="OPENAI_API_KEY",supports_websockets=false}`,
				needle}
		}},
		{"gemini", geministub.Reply, func(t *testing.T, store, cli string, m *mounted) ([]string, []string) {
			api, err := geministub.Start("127.0.0.1:0")
			require.NoError(t, err)
			t.Cleanup(func() { api.Close() })
			geminiSetup(t, store, m.session("s1"))
			return agentEnv(t, "GEMINI_API_KEY=test", "GOOGLE_GEMINI_BASE_URL="+api.URL), []string{cli, "-m", "gemini-2.5-flash", "-p", needle}
		}},
		{"qwen", openaistub.Reply, func(t *testing.T, store, cli string, _ *mounted) ([]string, []string) {
			api := openaiStub(t)
			return agentEnv(t, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+api.URL, "OPENAI_MODEL=stub-model"),
				[]string{cli, "--auth-type", "openai", needle}
		}},
		{"opencode", openaistub.Reply, func(t *testing.T, store, cli string, m *mounted) ([]string, []string) {
			api := openaiStub(t)
			opencodeSeed(t, m.session("s1"))
			return opencodeEnv(t, api.URL), []string{cli, "run", "--format", "json", needle}
		}},
		{"kimi", openaistub.Reply, func(t *testing.T, store, cli string, _ *mounted) ([]string, []string) {
			return kimiEnv(t, cli, openaiStub(t)), []string{cli, "-p", needle}
		}},
		{"copilot", openaistub.Reply, func(t *testing.T, store, cli string, _ *mounted) ([]string, []string) {
			api := openaiStub(t)
			return copilotEnv(t, api.URL), append([]string{cli}, copilotTurn(needle)...)
		}},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			cli := agentCLI(t, tc.agent)
			store := t.TempDir()
			ok(t, store, "new", "s1")
			m := mount(t, store)
			env, argv := tc.run(t, store, cli, m)
			r := agentExec(t, store, tc.agent, env, "", argv...)
			require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)

			shown := ok(t, store, "log", "s1", "--agent", tc.agent)
			t.Log("\n" + shown)
			assert.Contains(t, shown, "# "+tc.agent+" conversation ")
			assert.Contains(t, shown, "## User")
			assert.Contains(t, shown, needle)
			assert.Contains(t, shown, tc.reply)
			assert.Equal(t, shown, ok(t, store, "log", "s1"), "the session's latest conversation")
			id := strings.Fields(strings.SplitN(shown, "\n", 2)[0])[3]
			assert.Equal(t, shown, ok(t, store, "log", id), "found by its id in any session")
		})
	}
}

// openaiStub starts the OpenAI API stub for the test.
func openaiStub(t *testing.T) *openaistub.Server {
	t.Helper()
	api, err := openaistub.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { api.Close() })
	return api
}
