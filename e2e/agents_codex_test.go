package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/sessionfs/sessionfs/e2e/openaistub"
)

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

// TestCodexThreadsInEveryShape: Codex 0.171.0 keeps a thread in shapes beyond one rollout, each made here by the
// real CLI offline: a thread its app-server reverts (thread/revert, as an IDE asks) goes on in a second rollout,
// rollout-<time>-<thread>_<rollout>.jsonl, which exec resume writes on; codex archive moves a thread to
// archived_sessions/, flat; with its local_thread_store_compression feature (off by default) a rollout untouched
// for 7 days becomes <name>.jsonl.zst. Each is one conversation, read whole by show, find, log, search and the
// text view.
func TestCodexThreadsInEveryShape(t *testing.T) {
	codex := agentCLI(t, "codex")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	api := openaiStub(t)
	provider := []string{"-c", `model_provider="stub"`, "-c", `model_providers.stub={name="stub",base_url="` + api.URL +
		`",wire_api="responses",env_key="OPENAI_API_KEY",supports_websockets=false}`}
	env := agentEnv(t, "OPENAI_API_KEY=sk-test")
	ws := filepath.Join(m.session("s1"), "workspace")
	sessionID := regexp.MustCompile(`session id: ([0-9a-f-]{36})`)
	run := func(args ...string) string {
		t.Helper()
		out, err := agentOutside(t, store, "codex", ws, env, append(append([]string{codex, "exec", "--skip-git-repo-check"}, provider...), args...)...)
		require.NoError(t, err, out)
		return out
	}
	home := filepath.Join(store, "sessions", "s1", ".codex")

	cold := sessionID.FindStringSubmatch(run("the aardvark, compressed later"))[1]
	reverted := codexRevert(t, store, codex, ws, env, provider, "the badger", "reverted away")
	run("resume", reverted, "the capybara after the revert")
	archived := sessionID.FindStringSubmatch(run("the dugong, archived"))[1]
	out, err := agentOutside(t, store, "codex", ws, env, codex, "archive", archived)
	require.NoError(t, err, out)
	coldFile := glob(t, filepath.Join(home, "sessions", "*", "*", "*", "rollout-*-"+cold+".jsonl"))
	require.Len(t, coldFile, 1)
	old := time.Now().Add(-10 * 24 * time.Hour)
	require.NoError(t, os.Chtimes(coldFile[0], old, old))
	last := sessionID.FindStringSubmatch(run("--enable", "local_thread_store_compression", "the echidna"))[1]

	eventually(t, 10*time.Second, func() bool { return len(glob(t, coldFile[0]+".zst")) == 1 }, "compressed: %s", coldFile[0])
	require.NoFileExists(t, coldFile[0])
	assert.Len(t, glob(t, filepath.Join(home, "sessions", "*", "*", "*", "rollout-*-"+reverted+"_*.jsonl")), 1, "the revert's rollout")
	assert.Len(t, glob(t, filepath.Join(home, "sessions", "*", "*", "*", "rollout-*-"+reverted+".jsonl")), 1, "beside the first")
	assert.Len(t, glob(t, filepath.Join(home, "archived_sessions", "rollout-*-"+archived+".jsonl")), 1, "archived, flat")

	assert.Equal(t, map[string]string{"codex/" + cold: "the aardvark, compressed later", "codex/" + reverted: "the badger",
		"codex/" + archived: "the dugong, archived", "codex/" + last: "the echidna"}, shownConversations(t, store))
	for _, id := range []string{cold, reverted, archived} {
		session, agent := findAgent(t, store, id)
		assert.Equal(t, "s1/codex", session+"/"+agent, id)
	}
	said := ok(t, store, "log", "s1", reverted)
	var at []int
	for _, s := range []string{"the badger", "reverted away", "Thread reverted", "the capybara after the revert"} {
		at = append(at, strings.Index(said, s))
	}
	assert.True(t, at[0] >= 0 && sort.IntsAreSorted(at), "the thread's rollouts in order: %v\n%s", at, said)
	for word, id := range map[string]string{"aardvark": cold, "capybara": reverted, "badger": reverted, "dugong": archived} {
		hits := searchJSON(t, store, word)
		require.Len(t, hits, 1, word)
		assert.Equal(t, id, hits[0].Conversation, word)
		md, err := os.ReadFile(filepath.Join(m.mnt, "conversations", "s1", "codex", id+".md"))
		require.NoError(t, err)
		assert.Contains(t, string(md), word, "the text view")
	}
}

// codexRevert drives the real Codex app-server (stdio JSON-RPC, as an IDE does) in session s1: a thread of a turn
// each prompt, reverted to before its second; it returns the thread's id.
func codexRevert(t *testing.T, store, codex, dir string, env, provider []string, prompts ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, codex, append([]string{"app-server"}, provider...)...)
	cmd.Dir, cmd.Env = dir, outsideEnv(t, store, "codex", env)
	var stderr syncBuffer // read while the app-server writes it
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	dec := json.NewDecoder(out)
	type message struct {
		ID     *int            `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	n := 0
	send := func(method string, params any) {
		b, err := json.Marshal(map[string]any{"id": n, "method": method, "params": params})
		require.NoError(t, err)
		_, err = in.Write(append(b, '\n'))
		require.NoError(t, err)
	}
	until := func(done func(m message) bool) message {
		for {
			var m message
			require.NoError(t, dec.Decode(&m), "app-server: %s", stderr.String())
			require.False(t, m.ID != nil && m.Method != "", "the app-server asked %s", m.Method)
			if done(m) {
				return m
			}
		}
	}
	call := func(method string, params any, result any) {
		n++
		send(method, params)
		m := until(func(m message) bool { return m.ID != nil && *m.ID == n })
		require.Empty(t, m.Error, "%s: %s", method, m.Error)
		require.NoError(t, json.Unmarshal(m.Result, result))
	}
	var init, reverted any
	call("initialize", map[string]any{"clientInfo": map[string]string{"name": "e2e", "version": "1"}}, &init)
	_, err = in.Write([]byte(`{"method":"initialized"}` + "\n"))
	require.NoError(t, err)
	var thread struct{ Thread struct{ ID string } }
	call("thread/start", map[string]any{"cwd": dir}, &thread)
	var turns []string
	for _, p := range prompts {
		var turn struct{ Turn struct{ ID string } }
		call("turn/start", map[string]any{"threadId": thread.Thread.ID, "input": []any{map[string]string{"type": "text", "text": p}}}, &turn)
		until(func(m message) bool { return m.Method == "turn/completed" })
		turns = append(turns, turn.Turn.ID)
	}
	call("thread/revert", map[string]any{"threadId": thread.Thread.ID, "beforeTurnId": turns[1]}, &reverted)
	require.NoError(t, in.Close())
	require.NoError(t, cmd.Wait(), stderr.String())
	return thread.Thread.ID
}

// TestCodexContainerAndHost: a thread begun on the host carries on in a container (run --backend docker --agent
// codex: CODEX_HOME /session/.codex; Codex's static binary in busybox) and back on the host from a subfolder, one
// rollout throughout, every turn in it.
func TestCodexContainerAndHost(t *testing.T) {
	codex := agentCLI(t, "codex")
	cli := needDocker(t)
	images(t, cli, "")
	native := glob(t, filepath.Join(filepath.Dir(filepath.Dir(codex)), "@openai", "codex-linux-*", "vendor", "*", "bin", "codex"))
	require.Len(t, native, 1, "the npm package's static binary of this platform")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	mount(t, store)
	api := openaiStub(t)
	provider := []string{"-c", `model_provider="stub"`, "-c", `model_providers.stub={name="stub",base_url="` + api.URL +
		`",wire_api="responses",env_key="OPENAI_API_KEY",supports_websockets=false}`}
	turn := func(bin string, args ...string) []string {
		return append(append([]string{bin, "exec", "--skip-git-repo-check"}, provider...), args...)
	}
	env := agentEnv(t, "OPENAI_API_KEY=sk-test")

	r := agentExec(t, store, "codex", env, "", turn(codex, "the aardvark on the host")...)
	require.Equal(t, 0, r.code, "%s\n%s\nstub saw %v", r.stdout, r.stderr, api.Paths())
	rollouts := func() []string {
		return glob(t, filepath.Join(store, "sessions", "s1", ".codex", "sessions", "*", "*", "*", "rollout-*.jsonl"))
	}
	files := rollouts()
	require.Len(t, files, 1)
	id := codexRollout.FindStringSubmatch(files[0])[1]
	n := lines(t, files[0])

	// The container shares the host's network, so it reaches the stub on the loopback.
	r = dockerRun(t, store, append([]string{"--image", busyboxImage, "--network", "host", "--agent", "codex",
		"-v", native[0] + ":/usr/local/bin/codex:ro", "-e", "HOME=/tmp", "-e", "OPENAI_API_KEY=sk-test", "s1", "--"},
		turn("/usr/local/bin/codex", "resume", id, "the badger in a container")...)...)
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, openaistub.Reply)
	assert.Greater(t, lines(t, files[0]), n, "the container carried on the host's thread")
	n = lines(t, files[0])

	require.NoError(t, os.MkdirAll(filepath.Join(store, "sessions", "s1", "workspace", "sub"), 0o755))
	r = agentExec(t, store, "codex", env, "sub", turn(codex, "resume", id, "the capybara from a subfolder")...)
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Greater(t, lines(t, files[0]), n, "and the host carried on the container's")
	assert.Equal(t, files, rollouts(), "one rollout throughout")
	logInOrder(t, store, "codex", "the aardvark on the host", "the badger in a container", "the capybara from a subfolder")
	pageShows(t, store, "codex", id, "aardvark", "badger", "capybara")
}

// TestAttackCodexIndexLeadsOut: Codex writes a resumed thread's turns to the rollout path its state index names,
// wherever it is (a file named as a rollout), and the index is the session's to write (a container, a sandbox,
// an import). A session that plants one naming another session's rollout had sessionfs exec's Codex append its
// turns to that session on the host; each launch now moves an index naming a rollout outside the Codex folder
// aside, and Codex, building it again from its rollouts, goes on in its own.
func TestAttackCodexIndexLeadsOut(t *testing.T) {
	codex := agentCLI(t, "codex")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	mount(t, store)
	api := openaiStub(t)
	provider := []string{"-c", `model_provider="stub"`, "-c", `model_providers.stub={name="stub",base_url="` + api.URL +
		`",wire_api="responses",env_key="OPENAI_API_KEY",supports_websockets=false}`}
	turn := func(args ...string) []string {
		return append(append([]string{codex, "exec", "--skip-git-repo-check"}, provider...), args...)
	}
	env := agentEnv(t, "OPENAI_API_KEY=sk-test")
	r := agentExec(t, store, "codex", env, "", turn("the first turn")...)
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	files := glob(t, filepath.Join(store, "sessions", "s1", ".codex", "sessions", "*", "*", "*", "rollout-*.jsonl"))
	require.Len(t, files, 1)
	id := codexRollout.FindStringSubmatch(files[0])[1]
	n := lines(t, files[0])

	// The session plants its index: the thread's rollout is in session s2, a copy of it there.
	ok(t, store, "new", "s2")
	victim := filepath.Join(store, "sessions", "s2", ".codex", "sessions", "2026", "12", "03", filepath.Base(files[0]))
	require.NoError(t, os.MkdirAll(filepath.Dir(victim), 0o755))
	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(victim, b, 0o600))
	index := glob(t, filepath.Join(store, "sessions", "s1", ".codex", "state_*.sqlite"))
	require.Len(t, index, 1)
	db, err := sql.Open("sqlite", index[0])
	require.NoError(t, err)
	_, err = db.Exec(`UPDATE threads SET rollout_path = ? WHERE id = ?`, victim, id)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	r = agentExec(t, store, "codex", env, "", turn("resume", id, "the second turn")...)
	after, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, string(b), string(after), "the other session's rollout the planted index named is untouched")
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Greater(t, lines(t, files[0]), n, "the thread went on in its own rollout")
	assert.NotEmpty(t, glob(t, index[0]+".sessionfs-*"), "the planted index, moved aside")
}
