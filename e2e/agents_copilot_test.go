package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/docker/docker/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	copilotagent "github.com/sessionfs/sessionfs/agents/copilot"
	"github.com/sessionfs/sessionfs/e2e/openaistub"
	"github.com/sessionfs/sessionfs/internal/testimage"
)

// Copilot CLI (npm @github/copilot) runs offline against e2e/openaistub as a user's own provider (BYOK):
// COPILOT_OFFLINE skips GitHub's login, telemetry and updates, COPILOT_PROVIDER_BASE_URL and COPILOT_MODEL name the
// stub. Its binary unpacks its 189 MB package on first run into COPILOT_CACHE_HOME, a folder of the test's: not the
// session's, which would carry it into the store.

// copilotEnv is the offline environment for Copilot CLI against the stub at url.
func copilotEnv(t *testing.T, url string) []string {
	return agentEnv(t, "COPILOT_OFFLINE=true", "COPILOT_PROVIDER_BASE_URL="+url, "COPILOT_MODEL=stub-model",
		"COPILOT_AUTO_UPDATE=false", "COPILOT_CACHE_HOME="+t.TempDir(), "NO_PROXY=127.0.0.1,localhost")
}

// copilotTurn is a -p turn of Copilot CLI that asks for nothing and updates nothing.
func copilotTurn(prompt string, args ...string) []string {
	return append(args, "-p", prompt, "--allow-all-tools", "--no-auto-update")
}

// copilotEvents are the sessions' events.jsonl files in session s1 of store: one a conversation.
func copilotEvents(t *testing.T, store string) []string {
	return glob(t, filepath.Join(store, "sessions", "s1", ".copilot", "session-state", "*", "events.jsonl"))
}

// copilotCwds are the cwds of a session's runs in order, as its events.jsonl names them (session.start's, then
// each session.resume's).
func copilotCwds(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	var out []string
	_, err = agents.ScanJSON(f, func(e *copilotagent.Event) {
		if c := e.Cwd(); c != "" {
			out = append(out, c)
		}
	})
	require.NoError(t, err)
	return out
}

// TestCopilotResumesFromAnyCwd: Copilot keeps each session in session-state/<id>/ of COPILOT_HOME (.copilot in a
// session), named after nothing of the cwd: --continue takes the newest session whatever the cwd, and --resume ID
// finds it by its folder (and goes back to the cwd it began in). The conversation begun in the workspace is
// continued from a subfolder, by sessionfs resume, and from a shell elsewhere that evaluated sessionfs env, one
// folder throughout; and it reads whole in the text view, log, search, show and find; an export leaves its login
// file out.
func TestCopilotResumesFromAnyCwd(t *testing.T) {
	copilot := agentCLI(t, "copilot")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	api, err := openaistub.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { api.Close() })
	// sessionfs resume runs copilot from PATH: the npm bin folder goes first.
	env := withPath(copilotEnv(t, api.URL), copilot)

	r := agentExec(t, store, "copilot", env, "", append([]string{copilot}, copilotTurn("the aardvark in the workspace")...)...)
	require.Equal(t, 0, r.code, "%s\n%s\nstub saw %v", r.stdout, r.stderr, api.Paths())
	assert.Contains(t, r.stdout, openaistub.Reply)
	files := copilotEvents(t, store)
	require.Len(t, files, 1, "the session lands in the store's .copilot")
	file := files[0]
	id := filepath.Base(filepath.Dir(file))
	assert.Contains(t, r.stderr, "copilot --resume="+id, "the id Copilot prints is its folder's")
	n := lines(t, file)

	require.NoError(t, os.MkdirAll(filepath.Join(store, "sessions", "s1", "workspace", "sub"), 0o755))
	r = agentExec(t, store, "copilot", env, "sub", append([]string{copilot}, copilotTurn("the badger from a subfolder", "--continue")...)...)
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Greater(t, lines(t, file), n, "continued from a subfolder")
	n = lines(t, file)

	r = cliWith(t, store, "", env, nil, append([]string{"resume", id, "--"}, copilotTurn("the capybara via sessionfs resume")...)...)
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Greater(t, lines(t, file), n, "resumed by sessionfs resume")
	n = lines(t, file)

	outside := t.TempDir()
	out, err := agentOutside(t, store, "copilot", outside, env, append([]string{copilot}, copilotTurn("the dugong from outside", "--continue")...)...)
	require.NoError(t, err, out)
	assert.Greater(t, lines(t, file), n, "continued from a cwd outside the session")
	n = lines(t, file)
	// --resume ID from outside goes back to the cwd the session began in (workspace.yaml's), the workspace.
	out, err = agentOutside(t, store, "copilot", outside, env, append([]string{copilot}, copilotTurn("the eland by id from outside", "--resume="+id)...)...)
	require.NoError(t, err, out)
	assert.Greater(t, lines(t, file), n, "resumed by id from a cwd outside the session")
	assert.Equal(t, []string{file}, copilotEvents(t, store), "one session folder throughout")
	assert.NoDirExists(t, filepath.Join(store, "sessions", "s1", ".copilot", "pkg"), "the unpacked package stays out of the session")

	session, agent := findAgent(t, store, id)
	assert.Equal(t, "s1/copilot", session+"/"+agent)
	assert.Equal(t, "the aardvark in the workspace", shownConversations(t, store)["copilot/"+id])
	logInOrder(t, store, "copilot", "the aardvark in the workspace", openaistub.Reply, "the badger from a subfolder",
		"the capybara via sessionfs resume", "the dugong from outside", "the eland by id from outside")
	// Each run names its cwd: the workspace, its subfolder, the workspace again (sessionfs resume runs there), the
	// folder outside (--continue), and the workspace (--resume ID from outside).
	ws := filepath.Join(m.session("s1"), "workspace")
	assert.Equal(t, []string{ws, ws + "/sub", ws, outside, ws}, copilotCwds(t, file))
	// Copilot wrote a config.json of its own (its first launch; the login goes there where no keychain is): an
	// export leaves it out, as every agent's login.
	require.FileExists(t, filepath.Join(store, "sessions", "s1", ".copilot", "config.json"))
	exp := cli(t, store, "export", "s1", "-o", filepath.Join(t.TempDir(), "s1.tar"))
	require.Equal(t, 0, exp.code, exp.stderr)
	assert.Contains(t, exp.stderr, "left out the credential .copilot/config.json")
	readWhole(t, store, m, "copilot", id, "aardvark", "badger", "capybara", "dugong", "eland")
}

var (
	copilotImageOnce sync.Once
	copilotImageErr  error
	copilotImage     = "sessionfs-e2e-copilot:" + runTag
)

// copilotCAs is the host's bundle of trust roots (Debian's), where Copilot's HTTP client looks for them.
const copilotCAs = "/etc/ssl/certs/ca-certificates.crt"

// copilotNative is the native binary the npm loader copilot (node_modules/.bin/copilot) runs on linux-x64: a
// Node.js single-executable app that carries its own Node.js, so a container needs no other.
func copilotNative(t *testing.T, loader string) string {
	t.Helper()
	native := filepath.Join(filepath.Dir(filepath.Dir(loader)), "@github", "copilot-linux-x64", "copilot")
	real, err := filepath.EvalSymlinks(native)
	require.NoError(t, err, "the loader's native binary")
	return real
}

// copilotPrebuilds are the native parts of the package Copilot unpacked into the cache of env
// (COPILOT_CACHE_HOME): its Rust runtime (runtime.node, which loads libutil besides what the binary loads) and
// its helpers.
func copilotPrebuilds(t *testing.T, env []string) []string {
	t.Helper()
	cache := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "COPILOT_CACHE_HOME="); ok {
			cache = v
		}
	}
	require.NotEmpty(t, cache)
	out := glob(t, filepath.Join(cache, "pkg", "linux-x64", "*", "prebuilds", "linux-x64", "*"))
	require.NotEmpty(t, out, "Copilot unpacked its package into %s", cache)
	return out
}

// copilotImageFor builds the image Copilot's native binary runs in (bound in read-only): busybox and the shared
// libraries the binary needs, and those of the native parts it unpacks and loads (bins).
func copilotImageFor(t *testing.T, cli *client.Client, bins ...string) string {
	t.Helper()
	copilotImageOnce.Do(func() {
		seen := map[string]bool{}
		var all []string
		for _, bin := range bins {
			libs, err := testimage.SharedLibs(bin)
			if err != nil {
				copilotImageErr = err
				return
			}
			for _, l := range libs {
				if !seen[l] {
					seen[l] = true
					all = append(all, l)
				}
			}
		}
		copilotImageErr = importImage(cli, copilotImage, all)
	})
	require.NoError(t, copilotImageErr)
	return copilotImage
}

// TestCopilotContainerAndHost: a conversation begun on the host through the mount carries on in a container (run
// --backend docker --agent copilot: .copilot at /session/.copilot, the cwd /session/workspace) with --continue, and
// back on the host from a subfolder: one session folder throughout, every turn in it, in order. Resumed by its id
// in the container, it stays in /session/workspace: the cwd Copilot would go back to is the host's.
func TestCopilotContainerAndHost(t *testing.T) {
	copilot := agentCLI(t, "copilot")
	native := copilotNative(t, copilot)
	cli := needDocker(t)
	images(t, cli, "")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	api, err := openaistub.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { api.Close() })
	env := copilotEnv(t, api.URL)

	r := agentExec(t, store, "copilot", env, "", append([]string{copilot}, copilotTurn("the aardvark on the host")...)...)
	require.Equal(t, 0, r.code, "%s\n%s\nstub saw %v", r.stdout, r.stderr, api.Paths())
	files := copilotEvents(t, store)
	require.Len(t, files, 1)
	file := files[0]
	n := lines(t, file)
	img := copilotImageFor(t, cli, append([]string{native}, copilotPrebuilds(t, env)...)...)
	require.FileExists(t, copilotCAs, "the host's trust roots, for the container")

	// The container shares the host's network, so it reaches the stub on the loopback; the binary unpacks its
	// package into the container's /tmp. Its HTTP client will not start without trust roots, even for the stub's
	// plain HTTP: the host's bundle is bound in.
	args := []string{"--image", img, "--network", "host", "--agent", "copilot", "-v", native + ":/usr/local/bin/copilot:ro",
		"-v", copilotCAs + ":" + copilotCAs + ":ro", "-e", "HOME=/tmp", "-e", "COPILOT_CACHE_HOME=/tmp/copilot-cache"}
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "COPILOT_") && k != "COPILOT_CACHE_HOME" {
			args = append(args, "-e", kv)
		}
	}
	r = dockerRun(t, store, append(append(args, "s1", "--", "/usr/local/bin/copilot"), copilotTurn("the badger in a container", "--continue")...)...)
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, openaistub.Reply)
	assert.Greater(t, lines(t, file), n, "the container carried on the host's conversation")
	n = lines(t, file)

	require.NoError(t, os.MkdirAll(filepath.Join(store, "sessions", "s1", "workspace", "sub"), 0o755))
	r = agentExec(t, store, "copilot", env, "sub", append([]string{copilot}, copilotTurn("the capybara back on the host", "--continue")...)...)
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Greater(t, lines(t, file), n, "and the host carried on the container's")
	assert.Equal(t, []string{file}, copilotEvents(t, store), "one session folder throughout")
	logInOrder(t, store, "copilot", "the aardvark on the host", "the badger in a container", "the capybara back on the host")

	// --resume ID goes back to the cwd the session began in (workspace.yaml's): the host's mount, which the container
	// does not have. Copilot says so and stays in /session/workspace.
	id := filepath.Base(filepath.Dir(file))
	r = dockerRun(t, store, append(append(args, "s1", "--", "/usr/local/bin/copilot"), copilotTurn("the dugong by id in a container", "--resume="+id)...)...)
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Contains(t, r.stderr, "resume-auto-cd: ignoring persisted cwd")
	ws := filepath.Join(m.session("s1"), "workspace")
	assert.Equal(t, []string{ws, "/session/workspace", ws + "/sub", "/session/workspace"}, copilotCwds(t, file))
	assert.Equal(t, []string{file}, copilotEvents(t, store), "one session folder throughout")
	assert.Contains(t, ok(t, store, "log", "s1", "--agent", "copilot"), "the dugong by id in a container")
}
