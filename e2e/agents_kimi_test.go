package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/e2e/openaistub"
)

// kimiEnv is an offline environment for Kimi Code 2.1.0 against the stub: its provider from the variables it
// reads (an OpenAI-compatible one), no telemetry and no update check (the only other hosts it reaches), and the
// Node.js 22 the Makefile installed beside it first on PATH (Node 20 fails at its first import).
func kimiEnv(t *testing.T, kimi string, api *openaistub.Server) []string {
	return withPath(agentEnv(t, "KIMI_DISABLE_TELEMETRY=1", "KIMI_CODE_NO_AUTO_UPDATE=1", "KIMI_MODEL_NAME=stub-model",
		"KIMI_MODEL_API_KEY=sk-test", "KIMI_MODEL_BASE_URL="+api.URL, "KIMI_MODEL_PROVIDER_TYPE=openai"), kimi)
}

// kimiWires are the session's Kimi conversations: each one's main wire in the store.
func kimiWires(t *testing.T, store string) []string {
	return glob(t, filepath.Join(store, "sessions", "s1", ".kimi-code", "sessions", "*", "session_*", "agents", "main", "wire.jsonl"))
}

// TestKimiResumesFromAnyCwd: Kimi Code keeps a conversation for the cwd its state.json names, refusing to resume it
// from another ("created under a different directory") and continuing (-c) only the cwd's own; each launch of
// sessionfs moves the session's conversations to the cwd it starts Kimi in, so the conversation begun in the
// workspace carries on from a subfolder (-c), and by sessionfs resume from the workspace and from a shell outside
// the session, one conversation throughout; and it reads whole in the text view, log, search, show and find.
func TestKimiResumesFromAnyCwd(t *testing.T) {
	kimi := agentCLI(t, "kimi")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	api := openaiStub(t)
	env := kimiEnv(t, kimi, api)

	r := agentExec(t, store, "kimi", env, "", kimi, "-p", "the aardvark in the workspace")
	require.Equal(t, 0, r.code, "%s\n%s\nstub saw %v", r.stdout, r.stderr, api.Paths())
	assert.Contains(t, r.stdout, openaistub.Reply)
	wires := kimiWires(t, store)
	require.Len(t, wires, 1, "the conversation is in the session, in the store")
	wire := wires[0]
	id := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(wire))))
	n := lines(t, wire)

	require.NoError(t, os.MkdirAll(filepath.Join(store, "sessions", "s1", "workspace", "sub"), 0o755))
	r = agentExec(t, store, "kimi", env, "sub", kimi, "-c", "-p", "the badger from a subfolder")
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.NotContains(t, r.stderr, "starting a fresh session")
	assert.Greater(t, lines(t, wire), n, "continued from a subfolder")
	n = lines(t, wire)

	r = cliWith(t, store, "", env, nil, "resume", id, "--", "-p", "the capybara via sessionfs resume")
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Greater(t, lines(t, wire), n, "resumed by sessionfs resume")
	n = lines(t, wire)

	// A shell outside the session: sessionfs resume launches Kimi for the cwd it runs it in.
	r = cliWith(t, store, t.TempDir(), env, nil, "resume", id, "--", "-p", "the dugong from outside")
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Greater(t, lines(t, wire), n, "continued from a cwd outside the session")
	assert.Equal(t, []string{wire}, kimiWires(t, store), "one conversation throughout")

	session, agent := findAgent(t, store, id)
	assert.Equal(t, "s1/kimi", session+"/"+agent)
	assert.Equal(t, "the aardvark in the workspace", shownConversations(t, store)["kimi/"+id])
	logInOrder(t, store, "kimi", "the aardvark in the workspace", openaistub.Reply, "the badger from a subfolder",
		"the capybara via sessionfs resume", "the dugong from outside")
	readWhole(t, store, m, "kimi", id, "aardvark", "badger", "capybara", "dugong")
}

// TestKimiContainerAndHost: a conversation begun on the host through the mount carries on in a container (run
// --backend docker --agent kimi: .kimi-code at /session/.kimi-code, the cwd /session/workspace, where the launch
// moved it) and back on the host from a subfolder: one conversation throughout, every turn in it.
func TestKimiContainerAndHost(t *testing.T) {
	kimi := agentCLI(t, "kimi")
	cli := needDocker(t)
	images(t, cli, "")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	mount(t, store)
	api := openaiStub(t)
	env := kimiEnv(t, kimi, api)

	r := agentExec(t, store, "kimi", env, "", kimi, "-p", "the aardvark on the host")
	require.Equal(t, 0, r.code, "%s\n%s\nstub saw %v", r.stdout, r.stderr, api.Paths())
	wires := kimiWires(t, store)
	require.Len(t, wires, 1)
	wire := wires[0]
	n := lines(t, wire)

	// The container shares the host's network, so it reaches the stub on the loopback.
	img, flags, argv := nodeInContainer(t, cli, kimi, filepath.Join(filepath.Dir(kimi), "node"))
	args := append([]string{"--image", img, "--network", "host", "--agent", "kimi", "-e", "HOME=/tmp"}, flags...)
	for _, kv := range env {
		if strings.HasPrefix(kv, "KIMI_") {
			args = append(args, "-e", kv)
		}
	}
	r = dockerRun(t, store, append(append(append(args, "s1", "--"), argv...), "-c", "-p", "the badger in a container")...)
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, openaistub.Reply)
	assert.NotContains(t, r.stderr, "starting a fresh session")
	assert.Greater(t, lines(t, wire), n, "the container carried on the host's conversation")
	n = lines(t, wire)

	require.NoError(t, os.MkdirAll(filepath.Join(store, "sessions", "s1", "workspace", "sub"), 0o755))
	r = agentExec(t, store, "kimi", env, "sub", kimi, "-c", "-p", "the capybara back on the host")
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Greater(t, lines(t, wire), n, "and the host carried on the container's")
	assert.Equal(t, []string{wire}, kimiWires(t, store), "one conversation throughout")
	logInOrder(t, store, "kimi", "the aardvark on the host", "the badger in a container", "the capybara back on the host")
}
