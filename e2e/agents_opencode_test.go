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
	_ "modernc.org/sqlite"

	"github.com/sessionfs/sessionfs/e2e/openaistub"
	"github.com/sessionfs/sessionfs/internal/testimage"
)

// TestOpencodeFollowsTheCwd: opencode keeps its conversations in one SQLite database in the session's .opencode
// (XDG_DATA_HOME) and continues only those whose directory is its cwd exactly. sessionfs moves them to the cwd
// it starts opencode in (exec, exec -w, env, resume), so a conversation begun in the workspace continues from a
// subfolder and from a shell that evals "sessionfs env", through the mount; a cwd sessionfs did not start it in
// starts a new one.
func TestOpencodeFollowsTheCwd(t *testing.T) {
	oc := agentCLI(t, "opencode")
	store, m, api, env := opencodeSetup(t)
	ws := filepath.Join(m.session("s1"), "workspace")

	r := agentExec(t, store, "opencode", env, "", oc, "run", "--format", "json", "hello from the workspace")
	require.Equal(t, 0, r.code, "%s\n%s\nstub saw %v", r.stdout, r.stderr, api.Paths())
	assert.Contains(t, r.stdout, openaistub.Reply)
	id, s := only(t, opencodeSessions(t, store))
	assert.Equal(t, ws, s.dir, "keyed by the cwd, the mount's workspace")
	assert.Equal(t, []string{id}, opencodeIDs(r.stdout))
	n := s.messages

	// From a subfolder (exec -w): --continue finds it, moved there.
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "pkg"), 0o755))
	r = agentExec(t, store, "opencode", env, "pkg", oc, "run", "--format", "json", "--continue", "again from a subfolder")
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Equal(t, []string{id}, opencodeIDs(r.stdout), "the same conversation")
	_, s = only(t, opencodeSessions(t, store))
	assert.Equal(t, filepath.Join(ws, "pkg"), s.dir)
	assert.Greater(t, s.messages, n, "it grew")
	n = s.messages

	// A person's shell: "sessionfs env --agent opencode" moves them to the workspace, where the shell runs it.
	out, err := agentOutside(t, store, "opencode", ws, append(env, "PWD="+ws), oc, "run", "--format", "json", "--continue", "again from my shell")
	require.NoError(t, err, out)
	assert.Equal(t, []string{id}, opencodeIDs(out), "the same conversation")
	_, s = only(t, opencodeSessions(t, store))
	assert.Greater(t, s.messages, n)
	n = s.messages

	// "sessionfs resume ID" finds the session and runs opencode --session there, from PATH.
	r = cliWith(t, store, "", withPath(env, oc), nil, "resume", id, "--", "run", "--format", "json", "via sessionfs resume")
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Equal(t, []string{id}, opencodeIDs(r.stdout))
	_, s = only(t, opencodeSessions(t, store))
	assert.Greater(t, s.messages, n, "resumed by sessionfs resume")

	session, agent := findAgent(t, store, id)
	assert.Equal(t, "s1/opencode", session+"/"+agent)
	// opencode run stores an argument holding spaces quoted, as it joins its arguments into the prompt.
	assert.Equal(t, `"hello from the workspace"`, shownConversations(t, store)["opencode/"+id])

	// What does not hold: a cwd sessionfs did not start opencode in (after env, the shell cd'd elsewhere) has no
	// conversation of its own, so --continue starts one.
	out, err = agentOutside(t, store, "opencode", ws, env, "true")
	require.NoError(t, err, out)
	out, err = runIn(t, t.TempDir(), env, m.session("s1"), oc, "run", "--format", "json", "--continue", "from elsewhere")
	require.NoError(t, err, out)
	assert.Len(t, opencodeSessions(t, store), 2, "a new conversation")
}

// runIn runs argv in dir with env and the opencode variables of the session at root, as a shell that evaluated
// "sessionfs env --agent opencode" and then changed folder would.
func runIn(t *testing.T, dir string, env []string, root string, argv ...string) (string, error) {
	t.Helper()
	data := filepath.Join(root, ".opencode")
	env = append(append([]string{}, env...), "XDG_DATA_HOME="+filepath.Join(data, "data"), "XDG_CONFIG_HOME="+filepath.Join(data, "config"),
		"XDG_STATE_HOME="+filepath.Join(data, "state"), "OPENCODE_DB="+filepath.Join(data, "data", "opencode", "opencode.db"), "PWD="+dir)
	return runCmd(dir, env, argv...)
}

var (
	opencodeOnce  sync.Once
	opencodeErr   error
	opencodeImage = "sessionfs-e2e-opencode:" + runTag
)

// opencodeImageFor builds the image opencode's binary runs in (bound in read-only): busybox and the shared
// libraries the binary needs.
func opencodeImageFor(t *testing.T, cli *client.Client, binary string) string {
	t.Helper()
	opencodeOnce.Do(func() {
		var libs []string
		if libs, opencodeErr = testimage.SharedLibs(binary); opencodeErr == nil {
			opencodeErr = importImage(cli, opencodeImage, libs)
		}
	})
	require.NoError(t, opencodeErr)
	return opencodeImage
}

// TestOpencodeContainerAndHost: a conversation begun on the host (exec, through the mount) continues in a
// container (run --backend docker: the session at /session, opencode's cwd /session/workspace), and back on the
// host: each launch moves it to the cwd the run sees.
func TestOpencodeContainerAndHost(t *testing.T) {
	oc := agentCLI(t, "opencode")
	cli := needDocker(t)
	images(t, cli, "")
	real, err := filepath.EvalSymlinks(oc)
	require.NoError(t, err)
	img := opencodeImageFor(t, cli, real)
	store, m, api, env := opencodeSetup(t)
	ws := filepath.Join(m.session("s1"), "workspace")

	r := agentExec(t, store, "opencode", env, "", oc, "run", "--format", "json", "hello from the host")
	require.Equal(t, 0, r.code, "%s\n%s\nstub saw %v", r.stdout, r.stderr, api.Paths())
	id, s := only(t, opencodeSessions(t, store))
	n := s.messages

	// The container shares the host's network, so it reaches the stub on the loopback.
	args := []string{"--image", img, "--network", "host", "--agent", "opencode", "-v", real + ":/usr/local/bin/opencode:ro", "-e", "HOME=/tmp"}
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "OPENCODE_") {
			args = append(args, "-e", kv)
		}
	}
	r = dockerRun(t, store, append(args, "s1", "--", "/usr/local/bin/opencode", "run", "--format", "json", "--continue", "now in a container")...)
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Equal(t, []string{id}, opencodeIDs(r.stdout), "the host's conversation")
	_, s = only(t, opencodeSessions(t, store))
	assert.Equal(t, "/session/workspace", s.dir, "moved to the container's cwd")
	assert.Greater(t, s.messages, n)
	n = s.messages

	r = agentExec(t, store, "opencode", env, "", oc, "run", "--format", "json", "--continue", "back on the host")
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Equal(t, []string{id}, opencodeIDs(r.stdout))
	_, s = only(t, opencodeSessions(t, store))
	assert.Equal(t, ws, s.dir)
	assert.Greater(t, s.messages, n, "the container's turn and the host's, one conversation")
}
