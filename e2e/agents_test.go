package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	geminiagent "github.com/sessionfs/sessionfs/agents/gemini"
	qwenagent "github.com/sessionfs/sessionfs/agents/qwen"
	"github.com/sessionfs/sessionfs/e2e/geministub"
	"github.com/sessionfs/sessionfs/e2e/openaistub"
)

// envVars parses "sessionfs env" output into a map.
func envVars(t *testing.T, out string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, found := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		require.True(t, found, line)
		m[k] = strings.Trim(v, "'")
	}
	return m
}

// TestAgentFlag: env/exec/run --agent set the agent's variable (as the command sees the session) beside Claude's,
// make its folder on demand (Gemini's seeded with trust and the canonical project name), and refuse an unknown
// agent with one line.
func TestAgentFlag(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	sess := filepath.Join(store, "sessions", "s1")

	vars := envVars(t, ok(t, store, "env", "s1", "--agent", "codex"))
	assert.Equal(t, filepath.Join(sess, ".codex"), vars["CODEX_HOME"])
	assert.Equal(t, filepath.Join(sess, ".claude"), vars["CLAUDE_CONFIG_DIR"], "Claude's variables stay")
	assert.DirExists(t, filepath.Join(sess, ".codex"), "made on demand")
	assert.NotContains(t, envVars(t, ok(t, store, "env", "s1")), "CODEX_HOME", "claude is the default")

	vars = envVars(t, ok(t, store, "env", "s1", "--agent", "gemini", "--container"))
	assert.Equal(t, "/session", vars["GEMINI_CLI_HOME"], "the parent of .gemini, as a container sees it")
	b, err := os.ReadFile(filepath.Join(sess, ".gemini", "projects.json"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"projects":{"/session/workspace":"workspace"}}`, string(b))
	b, err = os.ReadFile(filepath.Join(sess, ".gemini", "trustedFolders.json"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"/session/workspace": "TRUST_FOLDER"`)
	b, err = os.ReadFile(filepath.Join(sess, ".gemini", "tmp", "workspace", geminiagent.Owner))
	require.NoError(t, err)
	assert.Equal(t, "/session/workspace", string(b), "the canonical name is claimed as Gemini claims one")

	// A QWEN_RUNTIME_DIR of the caller's would take Qwen's chats out of the session: it is the session's too.
	r := cliWith(t, store, "", append(os.Environ(), "QWEN_RUNTIME_DIR=/tmp/elsewhere"), nil,
		"exec", "s1", "--agent", "qwen", "--", "sh", "-c", `echo "$QWEN_HOME"; echo "$QWEN_RUNTIME_DIR"; pwd`)
	require.Equal(t, 0, r.code, r.stderr)
	qwen := filepath.Join(sess, ".qwen")
	assert.Equal(t, qwen+"\n"+qwen+"\n"+filepath.Join(sess, "workspace")+"\n", r.stdout)

	for _, args := range [][]string{{"env", "s1", "--agent", "aider"}, {"exec", "s1", "--agent=", "--", "true"},
		{"run", "--agent", "CODEX", "s1", "--", "true"}} {
		r := cli(t, store, args...)
		assert.Equal(t, 125, r.code, "%v", args)
		assert.Contains(t, r.stderr, "--agent", "%v", args)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, "one line: %q", r.stderr)
	}
	assert.NoDirExists(t, filepath.Join(sess, ".aider"))
}

// TestAgentFolderHostile: an agent folder the session made a link out of it is refused (the agent would follow
// it); a seed file made a link or a FIFO gets a warning; nothing outside the session is read or written, and
// nothing hangs.
func TestAgentFolderHostile(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	sess := filepath.Join(store, "sessions", "s1")
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.json")
	require.NoError(t, os.WriteFile(secret, []byte(`{"keep":"me"}`), 0o600))

	require.NoError(t, os.Symlink(outside, filepath.Join(sess, ".qwen")))
	require.NoError(t, os.MkdirAll(filepath.Join(sess, ".gemini"), 0o755))
	require.NoError(t, os.Symlink(secret, filepath.Join(sess, ".gemini", "trustedFolders.json")))
	ok(t, store, "new", "s2")
	fifo := filepath.Join(store, "sessions", "s2", ".gemini", "projects.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(fifo), 0o755))
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))

	done := make(chan struct{})
	go func() {
		defer close(done)
		r := cli(t, store, "env", "s1", "--agent", "gemini")
		assert.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stderr, "trustedFolders.json", "the refusal is said")
		for _, args := range [][]string{{"env", "s1", "--agent", "qwen"}, {"exec", "s1", "--agent", "qwen", "--", "touch", "ran"}} {
			r = cli(t, store, args...)
			assert.Equal(t, 125, r.code, "%v: %s", args, r.stderr)
			assert.Contains(t, r.stderr, "its .qwen is not a folder", "a QWEN_HOME that leads out of the session is refused")
		}
		assert.NoFileExists(t, filepath.Join(sess, "workspace", "ran"))
		r = cli(t, store, "env", "s2", "--agent", "gemini")
		assert.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stderr, "projects.json", "a FIFO is refused, not opened for reading")
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("env --agent hung on a FIFO")
	}
	b, err := os.ReadFile(secret)
	require.NoError(t, err)
	assert.Equal(t, `{"keep":"me"}`, string(b), "the file the link points at is untouched")
	ents, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Len(t, ents, 1, "nothing was made outside the session")
}

// TestAgentFlagDocker: run --backend docker --agent points the agent at its folder as the container sees it.
func TestAgentFlagDocker(t *testing.T) {
	cli := needDocker(t)
	images(t, cli, "")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	mount(t, store)
	r := dockerRun(t, store, "--image", busyboxImage, "--agent", "codex", "s1", "--", "sh", "-c",
		`echo "$CODEX_HOME"; echo "$CLAUDE_CONFIG_DIR"; test -d "$CODEX_HOME" && echo made`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "/session/.codex\n/session/.claude\nmade\n", r.stdout)
	r = dockerRun(t, store, "--image", busyboxImage, "--agent", "gemini", "s1", "--", "sh", "-c", `echo "$GEMINI_CLI_HOME"`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "/session\n", r.stdout)
}

// TestWatchOtherAgents: watch follows the other agents' conversations too, their folders made after it started,
// each message one line marked with its agent. The files are the ones the pinned CLIs wrote (agents/testdata),
// appended a line at a time as the CLIs append them.
func TestWatchOtherAgents(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	sess := filepath.Join(store, "sessions", "s1")
	cmd := exec.Command(bin, "watch", "s1")
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	var out strings.Builder
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdout = pw
	require.NoError(t, cmd.Start())
	pw.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	got := make(chan string, 100)
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := pr.Read(b)
			if n > 0 {
				got <- string(b[:n])
			}
			if err != nil {
				close(got)
				return
			}
		}
	}()
	time.Sleep(300 * time.Millisecond) // let it start watching

	src := filepath.Join("..", "agents", "testdata", "session")
	for _, glob := range []string{".codex/sessions/*/*/*/*.jsonl", ".gemini/tmp/*/chats/session-2026-11-23T07-00-*.jsonl", ".qwen/projects/*/chats/*.jsonl"} {
		files, err := filepath.Glob(filepath.Join(src, glob))
		require.NoError(t, err)
		require.Len(t, files, 1, glob)
		rel, err := filepath.Rel(src, files[0])
		require.NoError(t, err)
		dst := filepath.Join(sess, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		time.Sleep(200 * time.Millisecond)
		b, err := os.ReadFile(files[0])
		require.NoError(t, err)
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		require.NoError(t, err)
		for _, line := range strings.SplitAfter(string(b), "\n") {
			_, err := f.WriteString(line)
			require.NoError(t, err)
		}
		require.NoError(t, f.Close())
	}
	want := []string{`(?m)^01a20739 \d\d:\d\d:\d\d \[codex\] user hello there$`, `(?m)^01a20739 \d\d:\d\d:\d\d \[codex\] assistant stub reply$`,
		`(?m)^9ab916a9 \d\d:\d\d:\d\d \[gemini\] user hello there$`, `(?m)^9ab916a9 \d\d:\d\d:\d\d \[gemini\] assistant stub reply$`,
		`(?m)^6ff0322b \d\d:\d\d:\d\d \[qwen\] user hello there$`, `(?m)^6ff0322b \d\d:\d\d:\d\d \[qwen\] assistant stub reply$`}
	deadline := time.After(10 * time.Second)
	done := func() bool {
		for _, re := range want {
			if !regexp.MustCompile(re).MatchString(out.String()) {
				return false
			}
		}
		return true
	}
	for !done() {
		select {
		case s, open := <-got:
			require.True(t, open, "watch ended:\n%s", out.String())
			out.WriteString(s)
		case <-deadline:
			t.Fatalf("watch printed:\n%s", out.String())
		}
	}
	for settle := time.After(500 * time.Millisecond); ; { // anything more it would print
		select {
		case s := <-got:
			out.WriteString(s)
			continue
		case <-settle:
		}
		break
	}
	assert.NotContains(t, out.String(), "session_context", "the context the agents add is not a message")
	assert.NotContains(t, out.String(), "environment_context")
	assert.Equal(t, 10, strings.Count(out.String(), "\n"), "one line per message, Gemini's history rewrite not repeated:\n%s", out.String())
}

// TestAgentImportResumes: history an agent made in its own home before sessionfs (run by the real CLI, outside
// any session) is imported into a session with "import --agent", and the CLI resumes it there by id.
func TestAgentImportResumes(t *testing.T) {
	t.Run("codex", func(t *testing.T) {
		codex := agentCLI(t, "codex")
		api, err := openaistub.Start("127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { api.Close() })
		provider := []string{"-c", `model_provider="stub"`, "-c", `model_providers.stub={name="stub",base_url="` + api.URL +
			`",wire_api="responses",env_key="OPENAI_API_KEY",supports_websockets=false}`}
		run := func(args ...string) []string {
			return append(append([]string{codex, "exec", "--skip-git-repo-check"}, provider...), args...)
		}
		home, project := t.TempDir(), t.TempDir()
		cmd := exec.Command(run("before sessionfs")[0], run("before sessionfs")[1:]...)
		cmd.Dir, cmd.Env = project, agentEnv(t, "OPENAI_API_KEY=sk-test", "CODEX_HOME="+home)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		orig := glob(t, filepath.Join(home, "sessions", "*", "*", "*", "rollout-*.jsonl"))
		require.Len(t, orig, 1)
		id := codexRollout.FindStringSubmatch(orig[0])[1]
		before := lines(t, orig[0])

		store := t.TempDir()
		ok(t, store, "new", "s1")
		mount(t, store)
		r := cli(t, store, "import", "--agent", "codex", "--from", home, "--project", project, "--into", "s1")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "imported 1 codex conversation ")
		files := glob(t, filepath.Join(store, "sessions", "s1", ".codex", "sessions", "*", "*", "*", "rollout-*.jsonl"))
		require.Len(t, files, 1)
		n := lines(t, files[0])

		env := agentEnv(t, "OPENAI_API_KEY=sk-test")
		r = agentExec(t, store, "codex", env, "", run("resume", id, "after the import")...)
		require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
		assert.Greater(t, lines(t, files[0]), n, "the imported rollout was continued in the session")
		assert.Len(t, glob(t, filepath.Join(store, "sessions", "s1", ".codex", "sessions", "*", "*", "*", "rollout-*.jsonl")), 1)
		assert.Equal(t, before, lines(t, orig[0]), "the original is only read")
		session, agent := findAgent(t, store, id)
		assert.Equal(t, "s1/codex", session+"/"+agent)
	})
	t.Run("gemini", func(t *testing.T) {
		gemini := agentCLI(t, "gemini")
		api, err := geministub.Start("127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { api.Close() })
		home, project := t.TempDir(), filepath.Join(t.TempDir(), "webapp")
		require.NoError(t, os.MkdirAll(filepath.Join(home, ".gemini"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(home, ".gemini", "settings.json"),
			[]byte(`{"security":{"auth":{"selectedType":"gemini-api-key"}}}`), 0o644))
		require.NoError(t, os.MkdirAll(project, 0o755))
		env := agentEnv(t, "GEMINI_API_KEY=test", "GOOGLE_GEMINI_BASE_URL="+api.URL)
		cmd := exec.Command(gemini, "--skip-trust", "-m", "gemini-2.5-flash", "-p", "before sessionfs")
		cmd.Dir, cmd.Env = project, append(env, "GEMINI_CLI_HOME="+home)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		orig := glob(t, filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*.jsonl"))
		require.Len(t, orig, 1, "%s", out)

		store := t.TempDir()
		ok(t, store, "new", "s1")
		m := mount(t, store)
		geminiSetup(t, store, m.session("s1"))
		r := cli(t, store, "import", "--agent", "gemini", "--from", filepath.Join(home, ".gemini"), "--project", project, "--into", "s1", "--json")
		require.Equal(t, 0, r.code, r.stderr)
		var rep struct{ Imported []string }
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
		require.Len(t, rep.Imported, 1, r.stdout)
		id := rep.Imported[0]
		files := glob(t, filepath.Join(store, "sessions", "s1", ".gemini", "tmp", "workspace", "chats", "session-*.jsonl"))
		require.Len(t, files, 1)
		n := lines(t, files[0])

		r = agentExec(t, store, "gemini", env, "", gemini, "-m", "gemini-2.5-flash", "--resume", id, "-p", "after the import")
		require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
		assert.NotContains(t, r.stdout+r.stderr, "No previous sessions")
		b, err := os.ReadFile(files[0])
		require.NoError(t, err)
		assert.Greater(t, lines(t, files[0]), n, "the imported chat was continued in the session")
		assert.Contains(t, string(b), "after the import")
		session, agent := findAgent(t, store, id)
		assert.Equal(t, "s1/gemini", session+"/"+agent)

		// "sessionfs resume ID" finds the session and runs the agent's own resume there.
		r = cliWith(t, store, "", withPath(env, gemini), nil, "resume", id, "--", "-m", "gemini-2.5-flash", "-p", "via sessionfs resume")
		require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
		b, err = os.ReadFile(files[0])
		require.NoError(t, err)
		assert.Contains(t, string(b), "via sessionfs resume")
	})
}

// TestAgentViewsThroughMount: the other agents' cwd-keyed folders through the mount, without their CLIs: any
// name the agent could make is the canonical folder (Gemini's claim file excepted), other entries pass through,
// rm -rf takes everything, and a canonical folder the session made a link out of it is never followed.
func TestAgentViewsThroughMount(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	mnt, sess := m.session("s1"), filepath.Join(store, "sessions", "s1")

	// Gemini: mkdir of a new project name makes the canonical folder; the claim stays the name's own.
	tmp := filepath.Join(mnt, ".gemini", "tmp")
	require.NoError(t, os.MkdirAll(filepath.Join(tmp, "webapp", "chats"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "webapp", geminiagent.Owner), []byte("/src/webapp"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "webapp", "chats", "c.jsonl"), []byte("{}\n"), 0o644))
	assert.FileExists(t, filepath.Join(sess, ".gemini", "tmp", "workspace", "chats", "c.jsonl"), "written through the view, kept in the canonical folder")
	b, err := os.ReadFile(filepath.Join(sess, ".gemini", "tmp", "webapp", geminiagent.Owner))
	require.NoError(t, err)
	assert.Equal(t, "/src/webapp", string(b), "the claim is the name's own")
	assert.NoFileExists(t, filepath.Join(sess, ".gemini", "tmp", "workspace", geminiagent.Owner))
	assert.FileExists(t, filepath.Join(tmp, "api", "chats", "c.jsonl"), "every project name shows it")
	require.NoError(t, os.MkdirAll(filepath.Join(tmp, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "bin", "rg"), nil, 0o755))
	assert.FileExists(t, filepath.Join(sess, ".gemini", "tmp", "bin", "rg"), "Gemini's shared folders are its own")
	require.NoError(t, os.RemoveAll(filepath.Join(mnt, ".gemini")))
	assert.NoDirExists(t, filepath.Join(sess, ".gemini"))

	// Qwen: every cwd's folder is the canonical one; Codex's folders are plain.
	require.NoError(t, os.MkdirAll(filepath.Join(mnt, ".qwen", "projects", "-src-api", "chats"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(mnt, ".qwen", "projects", "-src-api", "chats", "q.jsonl"), []byte("{}\n"), 0o644))
	assert.FileExists(t, filepath.Join(sess, ".qwen", "projects", qwenagent.Folder(agents.CanonicalCwd), "chats", "q.jsonl"))
	require.NoError(t, os.MkdirAll(filepath.Join(mnt, ".codex", "sessions", "2026"), 0o755))
	assert.DirExists(t, filepath.Join(sess, ".codex", "sessions", "2026"))

	// Attack: the canonical folder made a link out of the session is never shown through a view.
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600))
	gtmp := filepath.Join(sess, ".gemini", "tmp")
	require.NoError(t, os.MkdirAll(gtmp, 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(gtmp, "workspace")))
	_, err = os.ReadFile(filepath.Join(tmp, "other", "secret"))
	assert.Error(t, err, "a view never leads through the link")
	assert.Error(t, os.WriteFile(filepath.Join(tmp, "other", "x"), nil, 0o644))
	ents, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Len(t, ents, 1, "nothing written outside")
}
