package e2e

import (
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

// claudeShellVars are what Claude Code 2.1.332 sets in the processes it starts (its Bash tool's shell, a hook): a
// `sessionfs exec` typed in its terminal, or run by its tool, inherits them.
func claudeShellVars(t *testing.T) []string {
	return []string{"CLAUDECODE=1", "CLAUDE_CODE_ENTRYPOINT=cli", "CLAUDE_CODE_SESSION_ID=0f0e0d0c-0000-4000-8000-00000000abcd",
		"CLAUDE_CODE_CHILD_SESSION=1", "CLAUDE_CODE_SESSION_ATTENDED=1", "CLAUDE_PID=1", "CLAUDE_CODE_CHILD_NOTES_DIR=" + t.TempDir(),
		"CODEX_SANDBOX=seatbelt", "GEMINI_CLI=1", "QWEN_CODE=1", "OPENCODE=1"}
}

// TestClaudeStartedFromAnAgentsShell (issue 50): `sessionfs exec ID -- claude`, typed in a Claude Code terminal (or
// run by an agent's tool), starts a Claude of its own: none of the marks an agent sets on its children reaches it
// (before, all of them did, and the CLI ran as a nested session of the other one: anthropics/claude-code#80654
// reports such a one writing no transcript), and the newest CLI's turn, -p and interactive, is in the session.
// `sessionfs env` unsets them in the shell that evals it.
func TestClaudeStartedFromAnAgentsShell(t *testing.T) {
	p := os.Getenv("SESSIONFS_CLAUDE_NEW")
	need(t, p != "", "the newest claude CLI: set SESSIONFS_CLAUDE_NEW (make claude installs it)")
	c := claudeAt(t, p)
	store, api := claudeSetup(t)
	canonical := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
	env := append(append(claudeEnv(t, api.URL), "SESSIONFS_STORE="+store), claudeShellVars(t)...)

	r := cliIn(t, store, "", env, "exec", "s1", "--", "env")
	require.Equal(t, 0, r.code, r.stderr)
	var leaked []string
	for _, kv := range claudeShellVars(t) {
		if k, _, _ := strings.Cut(kv, "="); strings.Contains("\n"+r.stdout, "\n"+k+"=") {
			leaked = append(leaked, k)
		}
	}
	assert.Empty(t, leaked, "an agent's marks on its children reach the command exec starts")

	r = cliIn(t, store, "", env, "exec", "s1", "--", c.path, "-p", "hello from a nested shell")
	require.Equal(t, 0, r.code, "claude -p: %s %s", r.stdout, r.stderr)
	files := transcripts(t, canonical)
	require.Len(t, files, 1, "claude -p's conversation is in the session")
	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	assert.Contains(t, string(b), "hello from a nested shell")
	assert.NotContains(t, string(b), "0f0e0d0c-0000-4000-8000-00000000abcd", "the conversation is its own, not the other session's")

	r = cliIn(t, store, "", env, "env", "s1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "unset CLAUDECODE CLAUDE_CODE_ENTRYPOINT CLAUDE_CODE_SESSION_ID CLAUDE_CODE_CHILD_SESSION", "env unsets the marks in the shell that evals it")

	// Interactive, in a terminal (Claude Code may begin fetching its plugin marketplace then: env ran before).
	_, err = exec.LookPath("tmux")
	need(t, err == nil, "tmux is missing (apt-get install tmux): the interactive CLI runs in a terminal")
	m := mount(t, store)
	ws := filepath.Join(m.session("s1"), "workspace")
	claudeTrusts(t, filepath.Join(store, "sessions", "s1", ".claude"), ws)
	tm := startTmux(t, ws, append(env, "TERM=xterm-256color"), bin, "exec", "s1", "--", c.path)
	tm.waitFor("❯", time.Minute)
	time.Sleep(time.Second) // the prompt is drawn before it takes keys
	tm.send("hello interactively", "Enter")
	eventually(t, time.Minute, func() bool { return strings.Count(tm.pane(), apistub.Reply) >= 1 }, "no reply: %s", tm.pane())
	eventually(t, 10*time.Second, func() bool { return len(transcripts(t, canonical)) == 2 },
		"the interactive conversation is in the session: %v", transcripts(t, canonical))
	tm.stop()
}
