package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/sessionfs/sessionfs/e2e/apistub"
	"github.com/sessionfs/sessionfs/e2e/geministub"
	"github.com/sessionfs/sessionfs/e2e/openaistub"
	"github.com/sessionfs/sessionfs/layout"
)

// fakeHome makes a ~/.claude with real conversations written by the claude CLI: one in each of two projects,
// one of them with a subagent, plus a file that is not a transcript.
func fakeHome(t *testing.T, claude, api string) (claudeDir string, projects []string) {
	t.Helper()
	home := t.TempDir()
	claudeDir = filepath.Join(home, ".claude")
	for i, prompt := range []string{"hello from web", "please " + apistub.AgentTrigger} {
		p := filepath.Join(home, "src", []string{"web", "api"}[i])
		require.NoError(t, os.MkdirAll(p, 0o755))
		out, err := claudeRun(t, claude, api, claudeDir, p, "-p", prompt)
		require.NoError(t, err, out)
		projects = append(projects, p)
	}
	bad := filepath.Join(claudeDir, "projects", "-junk")
	require.NoError(t, os.MkdirAll(bad, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bad, "broken.jsonl"), []byte("this is not json\nnor this\n"), 0o600))
	return claudeDir, projects
}

func uuidsIn(t *testing.T, claudeDir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(claudeDir, "projects", "-*", "*.jsonl"))
	require.NoError(t, err)
	var out []string
	for _, f := range files {
		if !strings.Contains(f, "-junk") {
			out = append(out, strings.TrimSuffix(filepath.Base(f), ".jsonl"))
		}
	}
	return out
}

// TestImport: existing Claude Code history becomes sessions, the originals untouched, and a second import adds
// only what is new.
func TestImport(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c claudeCLI) {
		claude := c.path
		api := stub(t, "127.0.0.1:0")
		claudeDir, projects := fakeHome(t, claude, api.URL)
		uuids := uuidsIn(t, claudeDir)
		require.Len(t, uuids, 2)
		before := snapshot(t, claudeDir)
		store := t.TempDir()

		r := cli(t, store, "import", "--from", claudeDir, "--dry-run")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "would import 2 conversations")
		ids, _ := os.ReadDir(filepath.Join(store, "sessions"))
		assert.Empty(t, ids, "a dry run changes nothing")

		r = cli(t, store, "import", "--from", claudeDir)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "imported 2 conversations (0 unchanged) into 2 new sessions; 1 file skipped")
		assert.Contains(t, r.stderr, "broken.jsonl", "the malformed file is reported")
		for _, u := range uuids {
			canon := filepath.Join(store, "sessions", u, ".claude", "projects", "-session-workspace")
			src, _ := filepath.Glob(filepath.Join(claudeDir, "projects", "*", u+".jsonl"))
			require.Len(t, src, 1)
			a, err := os.Stat(src[0])
			require.NoError(t, err)
			b, err := os.Stat(filepath.Join(canon, u+".jsonl"))
			require.NoError(t, err, "the transcript is in the session's canonical folder")
			assert.Equal(t, a.Size(), b.Size())
			assert.True(t, a.ModTime().Equal(b.ModTime()), "the mtime is kept")
		}
		var meta layout.Meta
		raw, err := os.ReadFile(filepath.Join(store, "sessions", uuids[0], "session.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &meta))
		assert.NotEmpty(t, meta.Cwds, "the conversation's cwd is recorded")
		assert.Contains(t, projects, meta.Cwds[0])
		agents, _ := filepath.Glob(filepath.Join(store, "sessions", "*", ".claude", "projects", "-session-workspace", "*", "subagents", "agent-*.jsonl"))
		assert.Len(t, agents, 1, "the sidecar folder comes along")
		assert.Equal(t, before, snapshot(t, claudeDir), "the originals are untouched")

		assert.Contains(t, ok(t, store, "import", "--from", claudeDir), "imported 0 conversations (2 unchanged)")
		// A conversation that grew is copied again.
		out, err := claudeRun(t, claude, api.URL, claudeDir, projects[0], "-p", "--continue", "more")
		require.NoError(t, err, out)
		assert.Contains(t, ok(t, store, "import", "--from", claudeDir), "imported 1 conversation (1 unchanged)")

		// --project and --into gather one project's conversations into one session.
		other := t.TempDir()
		assert.Contains(t, ok(t, other, "import", "--from", claudeDir, "--project", projects[1], "--into", "api"),
			"imported 1 conversation (0 unchanged) into 1 new session")
		convs, _ := filepath.Glob(filepath.Join(other, "sessions", "api", ".claude", "projects", "-session-workspace", "*.jsonl"))
		assert.Len(t, convs, 1)
		// A plain import afterwards brings the gathered conversation up to date in api: no second copy of it.
		assert.Contains(t, ok(t, other, "import", "--from", claudeDir), "imported 1 conversation (1 unchanged) into 1 new session")
		ids, _ = os.ReadDir(filepath.Join(other, "sessions"))
		assert.Len(t, ids, 2, "api and one session for the other conversation")
		// A dry run with --into counts the one session the run would make.
		var rep struct {
			Sessions []string `json:"sessions"`
		}
		require.NoError(t, json.Unmarshal([]byte(ok(t, t.TempDir(), "import", "--from", claudeDir, "--into", "all", "--dry-run", "--json")), &rep))
		assert.Equal(t, []string{"all"}, rep.Sessions)

		// An imported conversation resumes from any cwd through the mount.
		m := mount(t, store)
		out, err = claudeRun(t, claude, api.URL, filepath.Join(m.session(uuids[0]), ".claude"), t.TempDir(), "-p", "--resume", uuids[0], "resumed")
		require.NoError(t, err, out)
		assert.NotContains(t, out, "No conversation found")
	})
}

// snapshot maps every file under dir to its size and mtime.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			out[p] = fmt.Sprintf("%v/%d", fi.ModTime(), fi.Size())
		}
		return err
	}))
	return out
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
	t.Run("kimi", func(t *testing.T) {
		kimi := agentCLI(t, "kimi")
		api := openaiStub(t)
		env := kimiEnv(t, kimi, api)
		home, project := t.TempDir(), t.TempDir()
		cmd := exec.Command(kimi, "-p", "before sessionfs")
		cmd.Dir, cmd.Env = project, append(append([]string{}, env...), "KIMI_CODE_HOME="+home)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		orig := glob(t, filepath.Join(home, "sessions", "*", "session_*", "agents", "main", "wire.jsonl"))
		require.Len(t, orig, 1, "%s", out)
		before := lines(t, orig[0])

		store := t.TempDir()
		ok(t, store, "new", "s1")
		mount(t, store)
		r := cli(t, store, "import", "--agent", "kimi", "--from", home, "--project", project, "--into", "s1", "--json")
		require.Equal(t, 0, r.code, r.stderr)
		var rep struct{ Imported []string }
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
		require.Len(t, rep.Imported, 1, r.stdout)
		id := rep.Imported[0]
		wires := kimiWires(t, store)
		require.Len(t, wires, 1)
		n := lines(t, wires[0])

		// Kimi resumes it in the session, from the workspace sessionfs starts it in (the import kept its cwd: the
		// launch moves it), and sessionfs resume finds it too.
		r = agentExec(t, store, "kimi", env, "", kimi, "--session", id, "-p", "after the import")
		require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
		assert.Greater(t, lines(t, wires[0]), n, "the imported conversation was continued in the session")
		n = lines(t, wires[0])
		r = cliWith(t, store, "", env, nil, "resume", id, "--", "-p", "via sessionfs resume")
		require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
		assert.Greater(t, lines(t, wires[0]), n)
		assert.Equal(t, []string{wires[0]}, kimiWires(t, store))
		assert.Equal(t, before, lines(t, orig[0]), "the original is only read")
		session, agent := findAgent(t, store, id)
		assert.Equal(t, "s1/kimi", session+"/"+agent)
	})
}

// TestOpencodeImport: a conversation of opencode's run outside sessionfs (its own XDG folders, a cwd of its own)
// is imported into a session from the user's database (XDG_DATA_HOME/opencode, the default --from), and
// "opencode run --continue" in the session continues that conversation, not a new one. Imported again, it is
// unchanged: the session has it newer.
func TestOpencodeImport(t *testing.T) {
	oc := agentCLI(t, "opencode")
	store, _, api, env := opencodeSetup(t)
	home := t.TempDir()
	work := filepath.Join(home, "work")
	require.NoError(t, os.MkdirAll(work, 0o755))
	opencodeSeedConfig(t, filepath.Join(home, "config"))
	data := "XDG_DATA_HOME=" + filepath.Join(home, "data")
	out, err := runCmd(work, append(env, data, "XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"XDG_STATE_HOME="+filepath.Join(home, "state"), "PWD="+work), oc, "run", "--format", "json", "hello from my own opencode")
	require.NoError(t, err, "%s\nstub saw %v", out, api.Paths())
	ids := opencodeIDs(out)
	require.Len(t, ids, 1, out)
	id := ids[0]

	var rep struct{ Sessions, Imported, Unchanged []string }
	r := cliWith(t, store, "", []string{data}, nil, "import", "--agent", "opencode", "--into", "s1", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	assert.Equal(t, []string{id}, rep.Imported)
	got, s := only(t, opencodeSessions(t, store))
	assert.Equal(t, id, got)
	assert.Equal(t, work, s.dir, "its cwd as it was, until a launch moves it")
	n := s.messages

	r = agentExec(t, store, "opencode", env, "", oc, "run", "--format", "json", "--continue", "now in the session")
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Equal(t, []string{id}, opencodeIDs(r.stdout), "the imported conversation, continued")
	_, s = only(t, opencodeSessions(t, store))
	assert.Greater(t, s.messages, n, "it grew in the session")
	session, agent := findAgent(t, store, id)
	assert.Equal(t, "s1/opencode", session+"/"+agent)

	r = cliWith(t, store, "", []string{data}, nil, "import", "--agent", "opencode", "--into", "s1", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	rep.Imported = nil
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	assert.Empty(t, rep.Imported)
	assert.Equal(t, []string{id}, rep.Unchanged)
}
