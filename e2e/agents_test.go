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

// The other agents' real CLIs (make e2e installs the pinned versions into e2e/.cache), each run offline against a
// stub of its API on 127.0.0.1, through sessionfs exec/env --agent, so their variables are the ones sessionfs
// hands out.

// TestCodexResumesFromAnyCwd: the Codex CLI keeps its sessions in the session's .codex (CODEX_HOME), files them by
// date, and resumes one by id from any cwd; --last looks only at the cwd's own sessions unless --all.
func TestCodexResumesFromAnyCwd(t *testing.T) {
	codex := agentCLI(t, "codex")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	mount(t, store)
	api, err := openaistub.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { api.Close() })
	// A provider of its own: the stub speaks the Responses API over HTTP (no WebSocket), with this key.
	provider := []string{"-c", `model_provider="stub"`, "-c", `model_providers.stub={name="stub",base_url="` + api.URL +
		`",wire_api="responses",env_key="OPENAI_API_KEY",supports_websockets=false}`}
	env := agentEnv(t, "OPENAI_API_KEY=sk-test")
	run := func(args ...string) []string {
		return append(append([]string{codex, "exec", "--skip-git-repo-check"}, provider...), args...)
	}

	r := agentExec(t, store, "codex", env, "", run("hello from the workspace")...)
	require.Equal(t, 0, r.code, "%s\n%s\nstub saw %v", r.stdout, r.stderr, api.Paths())
	assert.Contains(t, r.stdout, openaistub.Reply)
	files := glob(t, filepath.Join(store, "sessions", "s1", ".codex", "sessions", "*", "*", "*", "rollout-*.jsonl"))
	require.Len(t, files, 1, "the rollout lands in the session's .codex, in the store")
	id := codexRollout.FindStringSubmatch(files[0])[1]
	n := lines(t, files[0])

	outside := t.TempDir()
	out, err := agentOutside(t, store, "codex", outside, env, run("resume", id, "again from outside")...)
	require.NoError(t, err, out)
	assert.Contains(t, out, openaistub.Reply)
	assert.Len(t, glob(t, filepath.Join(store, "sessions", "s1", ".codex", "sessions", "*", "*", "*", "rollout-*.jsonl")), 1,
		"resume by id continues the same file")
	assert.Greater(t, lines(t, files[0]), n)
	n = lines(t, files[0])

	// --last --all takes the newest session whatever its cwd; --last alone only the cwd's, so from a cwd that never
	// ran Codex it starts a new one.
	other := t.TempDir()
	out, err = agentOutside(t, store, "codex", other, env, run("resume", "--last", "--all", "and the newest")...)
	require.NoError(t, err, out)
	assert.Greater(t, lines(t, files[0]), n, "--last --all continued it")
	out, err = agentOutside(t, store, "codex", t.TempDir(), env, run("resume", "--last", "from a fresh cwd")...)
	require.NoError(t, err, out)
	assert.Len(t, glob(t, filepath.Join(store, "sessions", "s1", ".codex", "sessions", "*", "*", "*", "rollout-*.jsonl")), 2,
		"--last without --all filters by cwd: a new session")

	session, agent := findAgent(t, store, id)
	assert.Equal(t, "s1", session)
	assert.Equal(t, "codex", agent)
	assert.Equal(t, "hello from the workspace", shownConversations(t, store)["codex/"+id])
}

// TestGeminiResumesFromAnyCwd: Gemini CLI names a project folder after the cwd (through projects.json and a claim
// file in it); through the mount every such name is a view of the session's one project folder, each keeping its
// own claim, so a chat started in the workspace resumes from a subfolder and from outside the session.
func TestGeminiResumesFromAnyCwd(t *testing.T) {
	gemini := agentCLI(t, "gemini")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	api, err := geministub.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { api.Close() })
	geminiSetup(t, store, m.session("s1"))
	env := agentEnv(t, "GEMINI_API_KEY=test", "GOOGLE_GEMINI_BASE_URL="+api.URL)
	run := func(args ...string) []string {
		return append([]string{gemini, "-m", "gemini-2.5-flash"}, args...)
	}

	r := agentExec(t, store, "gemini", env, "", run("-p", "hello from the workspace")...)
	require.Equal(t, 0, r.code, "%s\n%s\nstub saw %v", r.stdout, r.stderr, api.Paths())
	assert.Contains(t, r.stdout, geministub.Reply)
	tmp := filepath.Join(store, "sessions", "s1", ".gemini", "tmp")
	chats := filepath.Join(tmp, "workspace", "chats")
	files := glob(t, filepath.Join(chats, "session-*.jsonl"))
	require.Len(t, files, 1, "the chat lands in the canonical project folder, in the store")
	var head struct{ SessionID string }
	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(strings.SplitN(string(b), "\n", 2)[0]), &head))
	id := head.SessionID
	n := len(strings.Split(geminiChat(t, chats, id), "\n"))
	// The mount's workspace path got a name of its own ("workspace" is /session/workspace's): a view, holding only
	// its claim in the store.
	ws := filepath.Join(m.session("s1"), "workspace")
	claims := glob(t, filepath.Join(tmp, "*", geminiagent.Owner))
	var owners []string
	for _, c := range claims {
		b, _ := os.ReadFile(c)
		owners = append(owners, string(b))
	}
	assert.ElementsMatch(t, []string{"/session/workspace", ws}, owners, "each name keeps its own claim")

	// From a subfolder of the workspace (exec -w) and from outside the session, by id and as "latest".
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "pkg"), 0o755))
	r = agentExec(t, store, "gemini", env, "workspace/pkg", run("--resume", id, "-p", "again from a subfolder")...)
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.NotContains(t, r.stdout+r.stderr, "No previous sessions")
	assert.Greater(t, len(strings.Split(geminiChat(t, chats, id), "\n")), n, "the same chat grows")
	outside := t.TempDir()
	out, err := agentOutside(t, store, "gemini", outside, env, run("--skip-trust", "--resume", "latest", "-p", "again from outside")...)
	require.NoError(t, err, out)
	assert.Contains(t, out, geministub.Reply)
	assert.NotContains(t, out, "No previous sessions")
	assert.Contains(t, geminiChat(t, chats, id), "again from outside", "the resumed turn is in the session's chat")
	for _, f := range glob(t, filepath.Join(chats, "session-*.jsonl")) {
		b, _ := os.ReadFile(f)
		assert.Contains(t, strings.SplitN(string(b), "\n", 2)[0], id, "no other conversation was started")
	}

	session, agent := findAgent(t, store, id)
	assert.Equal(t, "s1", session)
	assert.Equal(t, "gemini", agent)
	assert.Equal(t, "hello from the workspace", shownConversations(t, store)["gemini/"+id])

	// rm -rf of the agent's folder through the mount removes it, views and claims included.
	require.NoError(t, os.RemoveAll(filepath.Join(m.session("s1"), ".gemini")))
	assert.NoDirExists(t, filepath.Join(store, "sessions", "s1", ".gemini"))
}

// TestGeminiWithoutMountResumeFails is the control: on the plain store, the chat is not found from another cwd;
// once the store is mounted, it is.
// geminiChat is the content of chat id's files in folder chats. Gemini names a chat's file
// session-<minute>-<short id>.jsonl: a resume in a later minute writes the same chat to a new file.
func geminiChat(t *testing.T, chats, id string) string {
	t.Helper()
	var all string
	for _, f := range glob(t, filepath.Join(chats, "session-*.jsonl")) {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		if strings.Contains(strings.SplitN(string(b), "\n", 2)[0], id) {
			all += string(b)
		}
	}
	return all
}

func TestGeminiWithoutMountResumeFails(t *testing.T) {
	gemini := agentCLI(t, "gemini")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	api, err := geministub.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { api.Close() })
	geminiSetup(t, store, filepath.Join(store, "sessions", "s1"))
	env := agentEnv(t, "GEMINI_API_KEY=test", "GOOGLE_GEMINI_BASE_URL="+api.URL)
	r := agentExec(t, store, "gemini", env, "", gemini, "-m", "gemini-2.5-flash", "-p", "hello")
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	first := glob(t, filepath.Join(store, "sessions", "s1", ".gemini", "tmp", "*", "chats", "session-*.jsonl"))
	require.Len(t, first, 1)
	var head struct{ SessionID string }
	b, err := os.ReadFile(first[0])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(strings.SplitN(string(b), "\n", 2)[0]), &head))
	out, _ := agentOutside(t, store, "gemini", t.TempDir(), env, gemini, "--skip-trust", "-m", "gemini-2.5-flash", "--resume", "latest", "-p", "x")
	assert.Contains(t, out, "No previous sessions found for this project")

	// (Gemini then ran "x" as a new chat of that cwd's project.) Mounted afterwards: the chats Gemini filed under
	// the store path's and that cwd's project names are folded into the canonical folder the first time a view is
	// looked up, and resume from anywhere.
	mount(t, store)
	out, err = agentOutside(t, store, "gemini", t.TempDir(), env, gemini, "--skip-trust", "-m", "gemini-2.5-flash", "--resume", head.SessionID, "-p", "after mounting")
	require.NoError(t, err, out)
	assert.NotContains(t, out, "No previous sessions")
	// Gemini names a chat's file session-<minute>-<short id>: a resume in a later minute writes a new file of the
	// same chat, so chats are counted by id.
	files := glob(t, filepath.Join(store, "sessions", "s1", ".gemini", "tmp", "workspace", "chats", "session-*.jsonl"))
	chats := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		id := f[strings.LastIndex(f, "-")+1:]
		chats[id] += string(b)
	}
	assert.Len(t, chats, 2, "both chats, folded into the canonical folder: %v", files)
	firstID := first[0][strings.LastIndex(first[0], "-")+1:]
	assert.Contains(t, chats[firstID], "after mounting", "the first chat was resumed")
	assert.Len(t, glob(t, filepath.Join(store, "sessions", "s1", ".gemini", "tmp", "*", "chats")), 1, "no chats left under other names")
}

// TestQwenKeepsChatsInTheSession: Qwen Code files chats under projects/<sanitized cwd>/chats of the session's .qwen
// (QWEN_HOME), and through the mount that folder is a view of the session's one folder from any cwd. But Qwen also
// binds each chat to the cwd it started in (the first line's cwd must hash like the current one), so it resumes
// only from that cwd: from another one it says "No saved session found" although the file is right there, and
// --continue starts a new chat. The test checks both halves.
func TestQwenKeepsChatsInTheSession(t *testing.T) {
	qwen := agentCLI(t, "qwen")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	api, err := openaistub.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { api.Close() })
	env := agentEnv(t, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+api.URL, "OPENAI_MODEL=stub-model")
	run := func(args ...string) []string { return append([]string{qwen, "--auth-type", "openai"}, args...) }

	r := agentExec(t, store, "qwen", env, "", run("hello from the workspace")...)
	require.Equal(t, 0, r.code, "%s\n%s\nstub saw %v", r.stdout, r.stderr, api.Paths())
	assert.Contains(t, r.stdout, openaistub.Reply)
	chats := filepath.Join(store, "sessions", "s1", ".qwen", "projects", qwenagent.Folder(agents.CanonicalCwd), "chats")
	files := glob(t, filepath.Join(chats, "*.jsonl"))
	require.Len(t, files, 1, "the chat lands in the canonical folder, in the store")
	id := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
	n := lines(t, files[0])

	r = agentExec(t, store, "qwen", env, "", run("--resume", id, "again from the workspace")...)
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Greater(t, lines(t, files[0]), n, "resumed from its own cwd through the mount")
	n = lines(t, files[0])
	// "sessionfs resume ID" runs Qwen's own resume in the session's workspace, the chat's cwd.
	r = cliWith(t, store, "", withPath(env, qwen), nil, "resume", id, "--", "--auth-type", "openai", "via sessionfs resume")
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Greater(t, lines(t, files[0]), n, "resumed by sessionfs resume")
	n = lines(t, files[0])

	outside := t.TempDir()
	view := filepath.Join(m.session("s1"), ".qwen", "projects", qwenagent.Folder(outside), "chats", id+".jsonl")
	assert.FileExists(t, view, "the mount shows the chat in the folder of the other cwd")
	out, _ := agentOutside(t, store, "qwen", outside, env, run("--resume", id, "from outside")...)
	assert.Contains(t, out, "No saved session found", "Qwen refuses a chat begun in another cwd")
	assert.Equal(t, n, lines(t, files[0]))
	out, err = agentOutside(t, store, "qwen", outside, env, run("--continue", "continue from outside")...)
	require.NoError(t, err, out)
	assert.Len(t, glob(t, filepath.Join(chats, "*.jsonl")), 2, "--continue from another cwd starts a new chat")

	session, agent := findAgent(t, store, id)
	assert.Equal(t, "s1", session)
	assert.Equal(t, "qwen", agent)
	assert.Equal(t, "hello from the workspace", shownConversations(t, store)["qwen/"+id])
}

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
