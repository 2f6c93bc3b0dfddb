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
			assert.Equal(t, 1, r.code, "%v: %s", args, r.stderr)
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
