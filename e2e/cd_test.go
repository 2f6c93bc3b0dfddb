package e2e

import (
	"encoding/json"
	"io/fs"
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

// TestClaudeCdThroughMount: Claude Code's interactive /cd moves a conversation's transcript to the new cwd's
// projects folder, setting aside (2.1.251+) a same-id file found there. Through the mount both folders are views
// of one folder: afterwards one transcript holds the whole conversation, nothing is set aside, and the
// conversation resumes from the new cwd and the old one. Run by hand on the mount and in `sessionfs exec`, where
// CLAUDE_CODE_PROJECT_DIR_NAME pins the folder on new CLIs. Before the mount handled the set-aside, the newest CLI
// answered "Couldn't move" and renamed the one transcript aside and back.
func TestClaudeCdThroughMount(t *testing.T) {
	_, err := exec.LookPath("tmux")
	need(t, err == nil, "tmux is missing (apt-get install tmux): /cd is interactive only")
	forEachClaude(t, func(t *testing.T, c claudeCLI) {
		for _, how := range []string{"mount", "exec"} {
			t.Run(how, func(t *testing.T) { cdThroughMount(t, c, how) })
		}
	})
}

func cdThroughMount(t *testing.T, c claudeCLI, how string) {
	store, api := claudeSetup(t)
	m := mount(t, store)
	ws := filepath.Join(m.session("s1"), "workspace")
	sub := filepath.Join(ws, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	cfg := filepath.Join(m.session("s1"), ".claude")
	claudeTrusts(t, filepath.Join(store, "sessions", "s1", ".claude"), ws, sub)

	env := append(claudeEnv(t, api.URL), "TERM=xterm-256color")
	argv := []string{c.path}
	if how == "exec" {
		env = append(env, "SESSIONFS_STORE="+store)
		argv = []string{bin, "exec", "s1", "--", c.path}
	} else {
		env = append(env, "CLAUDE_CONFIG_DIR="+cfg)
	}
	tm := startTmux(t, ws, env, argv...)
	tm.waitFor("❯", time.Minute)
	time.Sleep(time.Second) // the prompt is drawn before it takes keys
	canonical := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")

	tm.send("hello there", "Enter")
	eventually(t, time.Minute, func() bool { return strings.Count(tm.pane(), apistub.Reply) >= 1 }, "no reply: %s", tm.pane())
	var files []string
	eventually(t, 10*time.Second, func() bool {
		files = transcripts(t, canonical)
		return len(files) == 1
	}, "the conversation is not in the canonical folder")
	uuid := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")

	tm.send("/cd sub")
	time.Sleep(time.Second) // let the command menu settle, or Enter picks from it
	tm.send("Enter")
	eventually(t, 30*time.Second, func() bool {
		p := tm.pane()
		return strings.Contains(p, "Moved to") || strings.Contains(p, "Couldn't")
	}, "/cd said nothing: %s", tm.pane())
	require.Contains(t, tm.pane(), "Moved to "+sub, "/cd failed")

	tm.send("after cd", "Enter")
	eventually(t, time.Minute, func() bool {
		b, _ := os.ReadFile(files[0])
		return strings.Count(string(b), apistub.Reply) >= 2 && strings.Contains(string(b), "after cd")
	}, "the turn after /cd is not in the one transcript: %s", tm.pane())
	tm.stop()

	assert.Equal(t, files, transcripts(t, canonical), "one transcript holds the whole conversation")
	assert.Empty(t, setAside(t, filepath.Join(store, "sessions", "s1", ".claude", "projects")), "nothing was set aside")
	n := lineCount(t, files[0])
	for _, dir := range []string{sub, ws} {
		out, err := claudeRun(t, c.path, api.URL, cfg, dir, "-p", "--resume", uuid, "from "+dir)
		require.NoError(t, err, out)
		assert.NotContains(t, out, "No conversation found")
		assert.Equal(t, files, transcripts(t, canonical), "resumed in the one transcript from %s", dir)
		assert.Greater(t, lineCount(t, files[0]), n, "grown from %s", dir)
		n = lineCount(t, files[0])
	}
}

// setAside lists the files and folders under dir that Claude Code set aside (*.superseded-*).
func setAside(t *testing.T, dir string) []string {
	t.Helper()
	var found []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".superseded-") {
			found = append(found, p)
		}
		return err
	}))
	return found
}

// claudeTrusts writes the config claude reads at start-up so it opens straight to its prompt in the given folders:
// onboarding done, the stub's API key approved, the folders trusted.
func claudeTrusts(t *testing.T, configDir string, dirs ...string) {
	t.Helper()
	projects := map[string]any{}
	for _, d := range dirs {
		projects[d] = map[string]any{"hasTrustDialogAccepted": true}
	}
	b, err := json.Marshal(map[string]any{
		"hasCompletedOnboarding": true,
		"theme":                  "dark",
		"customApiKeyResponses":  map[string]any{"approved": []string{"sk-ant-test"}, "rejected": []string{}},
		"projects":               projects,
	})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(configDir, ".claude.json"), b, 0o600))
}

// tmuxSession is a program running in a terminal of a private tmux server, for interactive CLIs.
type tmuxSession struct {
	t    *testing.T
	sock string
}

// startTmux runs argv with exactly env in dir, in a 150x40 terminal; it is killed when the test ends.
func startTmux(t *testing.T, dir string, env []string, argv ...string) *tmuxSession {
	t.Helper()
	s := &tmuxSession{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock")}
	args := append([]string{"-S", s.sock, "new-session", "-d", "-x", "150", "-y", "40", "-c", dir, "--",
		"env", "-i"}, append(env, argv...)...)
	out, err := exec.Command("tmux", args...).CombinedOutput()
	require.NoError(t, err, "tmux: %s", out)
	t.Cleanup(s.stop)
	return s
}

func (s *tmuxSession) send(keys ...string) {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.sock, "send-keys"}, keys...)...).CombinedOutput()
	require.NoError(s.t, err, "tmux send-keys: %s", out)
}

// pane is what the terminal shows now.
func (s *tmuxSession) pane() string {
	out, _ := exec.Command("tmux", "-S", s.sock, "capture-pane", "-p").Output()
	return string(out)
}

func (s *tmuxSession) waitFor(text string, timeout time.Duration) {
	s.t.Helper()
	eventually(s.t, timeout, func() bool { return strings.Contains(s.pane(), text) }, "the terminal never showed %q: %s", text, s.pane())
}

// stop ends the program and the tmux server.
func (s *tmuxSession) stop() {
	_ = exec.Command("tmux", "-S", s.sock, "kill-server").Run()
}
