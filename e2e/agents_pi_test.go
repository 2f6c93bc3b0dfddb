package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	piagent "github.com/sessionfs/sessionfs/agents/pi"
	"github.com/sessionfs/sessionfs/e2e/openaistub"
)

// piSetup makes session s1 with pi's folder and a provider of its own for the stub in the session's models.json
// (pi 1.6.0 reads no base URL from the environment: a provider's baseUrl is in models.json, or an extension's),
// approved as a user who looked at it would (models.json can run commands, so it needs an approval on this host).
func piSetup(t *testing.T, store string, api *openaistub.Server) {
	t.Helper()
	ok(t, store, "env", "s1", "--agent", "pi") // makes .pi
	models, err := json.Marshal(map[string]any{"providers": map[string]any{"stub": map[string]any{
		"baseUrl": api.URL, "api": "openai-completions", "apiKey": "sk-test",
		"models": []any{map[string]any{"id": "stub-model", "name": "Stub"}},
	}}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "s1", ".pi", "models.json"), models, 0o600))
	ok(t, store, "approve", "s1", "--yes")
}

// TestPiResumesFromAnyCwd: pi files each session under sessions/<its cwd, encoded>/ of PI_CODING_AGENT_DIR (.pi in
// a session), and its --continue looks only in the cwd's own folder: through the mount every cwd's folder is a view
// of the workspace's, so the conversation begun in the workspace is continued from a subfolder, by sessionfs
// resume, and from a shell elsewhere that evaluated sessionfs env, one file throughout; and it reads whole in the
// text view, log, search, show and find.
func TestPiResumesFromAnyCwd(t *testing.T) {
	pi := agentCLI(t, "pi")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	api, err := openaistub.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { api.Close() })
	piSetup(t, store, api)
	// pi 1.6.0 needs Node 22.19 or later: the Makefile installs npm's build of Node beside it, in the same bin folder,
	// which goes first on PATH (its "#!/usr/bin/env node" finds it there).
	env := withPath(agentEnv(t, "PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1", "PI_TELEMETRY=0"), pi)
	run := func(args ...string) []string {
		return append([]string{pi, "--provider", "stub", "--model", "stub-model", "--no-tools"}, args...)
	}

	r := agentExec(t, store, "pi", env, "", run("-p", "the aardvark in the workspace")...)
	require.Equal(t, 0, r.code, "%s\n%s\nstub saw %v", r.stdout, r.stderr, api.Paths())
	assert.Contains(t, r.stdout, openaistub.Reply)
	sessions := filepath.Join(store, "sessions", "s1", ".pi", "sessions")
	canonical := filepath.Join(sessions, piagent.Folder(agents.CanonicalCwd))
	files := glob(t, filepath.Join(canonical, "*.jsonl"))
	require.Len(t, files, 1, "the session lands in the canonical folder, in the store: %v", glob(t, filepath.Join(sessions, "*", "*")))
	id := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
	id = id[strings.LastIndexByte(id, '_')+1:]
	n := lines(t, files[0])

	require.NoError(t, os.MkdirAll(filepath.Join(store, "sessions", "s1", "workspace", "sub"), 0o755))
	r = agentExec(t, store, "pi", env, "sub", run("-p", "--continue", "the badger from a subfolder")...)
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Greater(t, lines(t, files[0]), n, "continued from a subfolder through the mount")
	n = lines(t, files[0])

	r = cliWith(t, store, "", env, nil, "resume", id, "--", "--provider", "stub", "--model", "stub-model",
		"--no-tools", "-p", "the capybara via sessionfs resume")
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Greater(t, lines(t, files[0]), n, "resumed by sessionfs resume")
	n = lines(t, files[0])

	outside := t.TempDir()
	view := filepath.Join(m.session("s1"), ".pi", "sessions", piagent.Folder(outside), filepath.Base(files[0]))
	assert.FileExists(t, view, "the mount shows the session in the folder of the other cwd")
	out, err := agentOutside(t, store, "pi", outside, env, run("-p", "--continue", "the dugong from outside")...)
	require.NoError(t, err, out)
	assert.Greater(t, lines(t, files[0]), n, "continued from a cwd outside the session")
	assert.Len(t, glob(t, filepath.Join(sessions, "*", "*.jsonl")), 1, "one session file throughout")

	session, agent := findAgent(t, store, id)
	assert.Equal(t, "s1/pi", session+"/"+agent)
	assert.Equal(t, "the aardvark in the workspace", shownConversations(t, store)["pi/"+id])
	logInOrder(t, store, "pi", "the aardvark in the workspace", openaistub.Reply, "the badger from a subfolder",
		"the capybara via sessionfs resume", "the dugong from outside")
	// pi wrote an auth.json of its own (empty here): an export leaves it out, as every agent's login.
	require.FileExists(t, filepath.Join(store, "sessions", "s1", ".pi", "auth.json"))
	exp := cli(t, store, "export", "s1", "-o", filepath.Join(t.TempDir(), "s1.tar"))
	require.Equal(t, 0, exp.code, exp.stderr)
	assert.Contains(t, exp.stderr, "left out the credential .pi/auth.json")
	readWhole(t, store, m, "pi", id, "aardvark", "badger", "capybara", "dugong")
}

// TestPiContainerAndHost: a conversation begun on the host through the mount carries on in a container (run
// --backend docker --agent pi: .pi at /session/.pi, the cwd /session/workspace, whose folder is the canonical one)
// and back on the host from a subfolder: one session file throughout, every turn in it.
func TestPiContainerAndHost(t *testing.T) {
	pi := agentCLI(t, "pi")
	cli := needDocker(t)
	images(t, cli, "")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	mount(t, store)
	api, err := openaistub.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { api.Close() })
	piSetup(t, store, api)
	env := withPath(agentEnv(t, "PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1", "PI_TELEMETRY=0"), pi)
	turn := []string{"--provider", "stub", "--model", "stub-model", "--no-tools", "-p"}

	r := agentExec(t, store, "pi", env, "", append(append([]string{pi}, turn...), "the aardvark on the host")...)
	require.Equal(t, 0, r.code, "%s\n%s\nstub saw %v", r.stdout, r.stderr, api.Paths())
	sessions := filepath.Join(store, "sessions", "s1", ".pi", "sessions")
	files := glob(t, filepath.Join(sessions, "*", "*.jsonl"))
	require.Len(t, files, 1)
	file := files[0]
	n := lines(t, file)

	// The container shares the host's network, so it reaches the stub on the loopback; pi runs under the Node.js
	// the Makefile installed beside it.
	img, flags, argv := nodeInContainer(t, cli, pi, filepath.Join(filepath.Dir(pi), "node"))
	args := append([]string{"--image", img, "--network", "host", "--agent", "pi", "-e", "HOME=/tmp",
		"-e", "PI_OFFLINE=1", "-e", "PI_SKIP_VERSION_CHECK=1", "-e", "PI_TELEMETRY=0"}, flags...)
	r = dockerRun(t, store, append(append(append(args, "s1", "--"), argv...), append(turn, "--continue", "the badger in a container")...)...)
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, openaistub.Reply)
	assert.Greater(t, lines(t, file), n, "the container carried on the host's conversation")
	n = lines(t, file)

	require.NoError(t, os.MkdirAll(filepath.Join(store, "sessions", "s1", "workspace", "sub"), 0o755))
	r = agentExec(t, store, "pi", env, "sub", append(append([]string{pi}, turn...), "--continue", "the capybara back on the host")...)
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Greater(t, lines(t, file), n, "and the host carried on the container's")
	assert.Equal(t, []string{file}, glob(t, filepath.Join(sessions, "*", "*.jsonl")), "one session file throughout")
	logInOrder(t, store, "pi", "the aardvark on the host", "the badger in a container", "the capybara back on the host")
}
