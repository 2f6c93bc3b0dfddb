package e2e

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/e2e/apistub"
)

// TestClaudeResumesFromAnyCwd is the mission: a conversation started in the session's workspace resumes from a
// subfolder and from a folder outside the mount, continuing the same file, never "No conversation found".
func TestClaudeResumesFromAnyCwd(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c claudeCLI) {
		store, api := claudeSetup(t)
		claude := c.path
		m := mount(t, store)
		cfg := filepath.Join(m.session("s1"), ".claude")
		ws := filepath.Join(m.session("s1"), "workspace")
		sub := filepath.Join(ws, "pkg", "deep")
		require.NoError(t, os.MkdirAll(sub, 0o755))
		outside := t.TempDir()

		out, err := claudeRun(t, claude, api.URL, cfg, ws, "-p", "hello")
		require.NoError(t, err, out)
		assert.Contains(t, out, apistub.Reply)
		canonical := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
		files := transcripts(t, canonical)
		require.Len(t, files, 1, "the transcript lands in the store's canonical folder")
		uuid := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
		n := lineCount(t, files[0])

		for _, dir := range []string{sub, outside} {
			out, err := claudeRun(t, claude, api.URL, cfg, dir, "-p", "--resume", uuid, "again from "+dir)
			require.NoError(t, err, "resume from %s: %s", dir, out)
			assert.NotContains(t, out, "No conversation found")
			assert.Contains(t, out, apistub.Reply)
			require.Len(t, transcripts(t, canonical), 1, "resume continues the same file")
			grown := lineCount(t, files[0])
			assert.Greater(t, grown, n, "the transcript grows")
			n = grown
		}
		b, err := os.ReadFile(files[0])
		require.NoError(t, err)
		assert.Contains(t, string(b), `"cwd":"`+outside+`"`, "new lines carry the new cwd")

		// --continue from yet another cwd picks the newest conversation: the same file grows.
		other := t.TempDir()
		out, err = claudeRun(t, claude, api.URL, cfg, other, "-p", "--continue", "and continue")
		require.NoError(t, err, out)
		require.Len(t, transcripts(t, canonical), 1, "--continue did not start a new conversation")
		assert.Greater(t, lineCount(t, files[0]), n)

		// The aliases the session used are recorded; the listing is the store's, each transcript once
		// (mount_copies_test.go), and an alias answers a lookup.
		eventually(t, 5e9, func() bool {
			meta, _ := os.ReadFile(filepath.Join(store, "sessions", "s1", "session.json"))
			return strings.Contains(string(meta), claudeName(outside))
		}, "the alias of %s is recorded in session.json", outside)
		ents, err := os.ReadDir(filepath.Join(cfg, "projects"))
		require.NoError(t, err)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		assert.Equal(t, []string{"-session-workspace"}, names)
		assert.DirExists(t, filepath.Join(cfg, "projects", claudeName(outside)))
	})
}

// claudeName is what Claude Code names the transcript folder of a plain ASCII path.
func claudeName(p string) string {
	real, err := filepath.EvalSymlinks(p)
	if err == nil {
		p = real
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, p)
}

// TestWithoutMountResumeFails is the control: against the plain store, a conversation does not follow its session
// to another cwd. The old CLI says "No conversation found" to --resume; newer ones (2.1.223+) find it, since
// --resume scans every projects folder, but --continue from another cwd starts a new conversation. It proves the
// mount is what makes the other tests pass, and that the oracle is real.
func TestWithoutMountResumeFails(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c claudeCLI) {
		store, api := claudeSetup(t)
		cfg := filepath.Join(store, "sessions", "s1", ".claude")
		ws := filepath.Join(store, "sessions", "s1", "workspace")
		out, err := claudeRun(t, c.path, api.URL, cfg, ws, "-p", "hello")
		require.NoError(t, err, out)
		files := transcripts(t, filepath.Join(cfg, "projects", claudeName(ws)))
		require.Len(t, files, 1)
		uuid := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
		out, _ = claudeRun(t, c.path, api.URL, cfg, t.TempDir(), "-p", "--resume", uuid, "x")
		if c.atLeast("2.1.223") {
			assert.NotContains(t, out, "No conversation found", "new CLIs scan every projects folder")
		} else {
			assert.Contains(t, out, "No conversation found")
		}
		out, err = claudeRun(t, c.path, api.URL, cfg, t.TempDir(), "-p", "--continue", "x")
		require.NoError(t, err, out)
		all, err := filepath.Glob(filepath.Join(cfg, "projects", "*", "*.jsonl"))
		require.NoError(t, err)
		assert.Len(t, all, 2, "--continue from another cwd started a second conversation")
	})
}

// TestProjectDirNameWithoutMount: with CLAUDE_CODE_PROJECT_DIR_NAME (which sessionfs sets in every environment it
// hands out), CLIs since 2.1.234 file every cwd's transcript in the canonical folder, so --resume and --continue
// from any cwd continue one file with no mount at all. Older CLIs ignore the variable: they need the mount's views.
func TestProjectDirNameWithoutMount(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c claudeCLI) {
		store, api := claudeSetup(t)
		cfg := filepath.Join(store, "sessions", "s1", ".claude")
		ws := filepath.Join(store, "sessions", "s1", "workspace")
		env := []string{"CLAUDE_CONFIG_DIR=" + cfg, "CLAUDE_CODE_PROJECT_DIR_NAME=" + claude.ProjectDirName}
		out, err := claudeRunEnv(t, c.path, api.URL, env, ws, "-p", "hello")
		require.NoError(t, err, out)
		if !c.atLeast("2.1.234") {
			assert.Len(t, transcripts(t, filepath.Join(cfg, "projects", claudeName(ws))), 1, "the old CLI ignores the variable")
			return
		}
		canonical := filepath.Join(cfg, "projects", claude.ProjectDirName)
		files := transcripts(t, canonical)
		require.Len(t, files, 1, "the transcript is in the canonical folder")
		uuid := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
		n := lineCount(t, files[0])
		for _, args := range [][]string{{"--resume", uuid, "again"}, {"--continue", "and again"}} {
			out, err := claudeRunEnv(t, c.path, api.URL, env, t.TempDir(), append([]string{"-p"}, args...)...)
			require.NoError(t, err, out)
			assert.NotContains(t, out, "No conversation found")
			all, err := filepath.Glob(filepath.Join(cfg, "projects", "*", "*.jsonl"))
			require.NoError(t, err)
			assert.Equal(t, files, all, "%v continued the one transcript", args)
			assert.Greater(t, lineCount(t, files[0]), n, "%v grew it", args)
			n = lineCount(t, files[0])
		}
	})
}

// TestSubagentVisibleThroughEveryAlias: a subagent transcript, in the conversation's sidecar folder, is the same
// file under every alias, and folders under different aliases are distinct inodes.
func TestSubagentVisibleThroughEveryAlias(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c claudeCLI) {
		store, api := claudeSetup(t)
		claude := c.path
		m := mount(t, store)
		cfg := filepath.Join(m.session("s1"), ".claude")
		out, err := claudeRun(t, claude, api.URL, cfg, filepath.Join(m.session("s1"), "workspace"), "-p", "please "+apistub.AgentTrigger)
		require.NoError(t, err, out)

		agents, err := filepath.Glob(filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace", "*", "subagents", "agent-*.jsonl"))
		require.NoError(t, err)
		require.Len(t, agents, 1, "claude wrote a subagent transcript into the canonical folder")
		rel, err := filepath.Rel(filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace"), agents[0])
		require.NoError(t, err)
		want, err := os.ReadFile(agents[0])
		require.NoError(t, err)

		var fileInos, dirInos []uint64
		for _, alias := range []string{"-session-workspace", "-home-u-proj", claudeName(t.TempDir()), "-x"} {
			p := filepath.Join(cfg, "projects", alias, rel)
			got, err := os.ReadFile(p)
			require.NoError(t, err, "through alias %s", alias)
			assert.Equal(t, want, got)
			var st syscall.Stat_t
			require.NoError(t, syscall.Stat(p, &st))
			fileInos = append(fileInos, st.Ino)
			require.NoError(t, syscall.Stat(filepath.Dir(p), &st))
			dirInos = append(dirInos, st.Ino)
		}
		for i := range fileInos {
			assert.Equal(t, fileInos[0], fileInos[i], "a file is one inode under every alias")
			for j := range dirInos {
				if i != j {
					assert.NotEqual(t, dirInos[i], dirInos[j], "folders under different aliases are distinct inodes")
				}
			}
		}
		_, err = os.Stat(filepath.Join(cfg, "projects", "not.a.claude.name"))
		assert.ErrorIs(t, err, os.ErrNotExist, "names outside Claude's alphabet do not exist")
	})
}

// TestUnmountedHistoryIsFoldedIn: a conversation made while the store was not mounted (Claude filed it under the
// store path's folder) resumes from any cwd once the store is mounted.
func TestUnmountedHistoryIsFoldedIn(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c claudeCLI) {
		store, api := claudeSetup(t)
		claude := c.path
		ws := filepath.Join(store, "sessions", "s1", "workspace")
		out, err := claudeRun(t, claude, api.URL, filepath.Join(store, "sessions", "s1", ".claude"), ws, "-p", "before the mount")
		require.NoError(t, err, out)
		files := transcripts(t, filepath.Join(store, "sessions", "s1", ".claude", "projects", claudeName(ws)))
		require.Len(t, files, 1)
		uuid := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")

		m := mount(t, store)
		out, err = claudeRun(t, claude, api.URL, filepath.Join(m.session("s1"), ".claude"), t.TempDir(), "-p", "--resume", uuid, "after")
		require.NoError(t, err, out)
		assert.NotContains(t, out, "No conversation found")
		canonical := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
		require.Len(t, transcripts(t, canonical), 1, "folded into the canonical folder and resumed there")
		assert.NoDirExists(t, filepath.Join(store, "sessions", "s1", ".claude", "projects", claudeName(ws)))
	})
}

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

// Every environment sessionfs hands out pins Claude Code's projects folder to the canonical one (honoured by
// CLIs since 2.1.234 beside CLAUDE_CONFIG_DIR), so new CLIs resume from any cwd even with no mount.
func TestProjectDirNameEverywhere(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	const want = "-session-workspace"
	assert.Contains(t, ok(t, store, "env", "s1"), "export CLAUDE_CODE_PROJECT_DIR_NAME='"+want+"'")
	assert.Contains(t, ok(t, store, "env", "s1", "--container"), "export CLAUDE_CODE_PROJECT_DIR_NAME='"+want+"'")
	assert.Equal(t, want+"\n", ok(t, store, "exec", "s1", "--", "sh", "-c", `echo "$CLAUDE_CODE_PROJECT_DIR_NAME"`))
}

func TestDockerProjectDirName(t *testing.T) {
	images(t, needDocker(t), "")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	r := dockerRun(t, store, "--image", busyboxImage, "s1", "--", "sh", "-c", `echo "$CLAUDE_CODE_PROJECT_DIR_NAME"`)
	assert.Equal(t, "-session-workspace\n", r.stdout, r.stderr)
}
