package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/e2e/apistub"
)

// TestContainerUserRecordsTheTurn (issue 50, 2): "run --backend docker -- claude -p --continue" and "resume
// --backend docker" with no --user record the turn in the session's conversation, as root and for a session of a
// uid that is not the image's (1001), with the project's image (whose user is uid 1000) and with a plain one
// (root's); a --user that could not write the session is refused before anything starts. Before, the image's
// uid 1000 could not read root's 0600 transcript: Claude started a new conversation it could not save either,
// answered, and exited 0 with the turn lost.
func TestContainerUserRecordsTheTurn(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: to give sessions to uids that are not the image's")
	needFUSE(t)
	docker := needDocker(t)
	needImageBuild(t)
	t.Logf("make agent-image: %s", lastLines(buildCommand(t, 15*time.Minute, nil, "make", "--no-print-directory", "agent-image"), 1))
	claude := claudeBin(t)
	real, err := filepath.EvalSymlinks(claude)
	require.NoError(t, err)
	images(t, docker, real)
	api := stub(t, "127.0.0.1:0")
	// The container shares the host's network namespace, so it reaches the stub on the loopback.
	toStub := []string{"--network", "host", "-e", "ANTHROPIC_BASE_URL=" + api.URL, "-e", "ANTHROPIC_API_KEY=sk-ant-test",
		"-e", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	plain := append([]string{"--image", claudeImage, "-v", real + ":/usr/local/bin/claude:ro"}, toStub...)
	project := append([]string{"--image", agentImage}, toStub...)

	// turn asks for a turn with run (or resume, when first is "resume") and checks it is in the session's one
	// conversation, written by uid.
	turn := func(t *testing.T, store string, uid uint32, how []string, resume bool) {
		t.Helper()
		canonical := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
		before := 0
		if files := transcripts(t, canonical); len(files) == 1 {
			before = lineCount(t, files[0])
		}
		args := append(append([]string{"run", "--backend", "docker"}, how...), "s1", "--", "claude", "-p", "--continue", "a turn")
		if resume {
			args = append(append([]string{"resume", "s1"}, how...), "--", "-p", "a turn")
		}
		r := cli(t, store, args...)
		require.Equal(t, 0, r.code, "%v: %s %s", args, r.stdout, r.stderr)
		assert.Contains(t, r.stdout, apistub.Reply)
		files := transcripts(t, canonical)
		require.Len(t, files, 1, "%v: the turn is in the session's one conversation", args)
		assert.Greater(t, lineCount(t, files[0]), before, "%v: the turn is recorded", args)
		var st syscall.Stat_t
		require.NoError(t, syscall.Stat(files[0], &st))
		assert.Equal(t, uid, st.Uid, "%v: the session's owner wrote it", args)
	}
	// refused checks that --user user is turned away before the container starts, with the fix.
	refused := func(t *testing.T, store, user string, how []string) {
		t.Helper()
		asked := api.Requests.Load()
		for _, args := range [][]string{
			append(append([]string{"run", "--backend", "docker", "--user", user}, how...), "s1", "--", "claude", "-p", "--continue", "lost?"),
			append(append([]string{"resume", "s1", "--user", user}, how...), "--", "-p", "lost?"),
		} {
			r := cli(t, store, args...)
			assert.Equal(t, 125, r.code, "%v: %s %s", args, r.stdout, r.stderr)
			assert.Contains(t, r.stderr, "cannot write", args)
			assert.Contains(t, r.stderr, "leave --user out to run as the session's owner", args)
		}
		assert.Equal(t, asked, api.Requests.Load(), "no agent was started")
	}

	t.Run("root", func(t *testing.T) {
		store := t.TempDir()
		ok(t, store, "new", "s1")
		mount(t, store, "--allow-other")
		refused(t, store, "agent", project)
		turn(t, store, 0, project, false)
		turn(t, store, 0, project, true)
		turn(t, store, 0, plain, false)
	})
	t.Run("uid 1001", func(t *testing.T) {
		store := t.TempDir()
		ok(t, store, "new", "s1")
		require.NoError(t, chownTree(filepath.Join(store, "sessions", "s1"), 1001, 1001))
		mount(t, store, "--allow-other")
		refused(t, store, "1000", project)
		turn(t, store, 1001, project, false)
		turn(t, store, 1001, plain, true)
	})
	t.Run("uid 1001 runs it, unmounted", func(t *testing.T) {
		// As that user would: its own store, the engine's socket through its group, nothing mounted (a normal
		// user's mount needs user_allow_other for the engine to reach it).
		home := reachableDir(t)
		require.NoError(t, os.Chown(home, 1001, 1001))
		self := installSessionfs(t, home)
		var sock syscall.Stat_t
		require.NoError(t, syscall.Stat(dockerSocket(), &sock))
		as := func(args ...string) result {
			t.Helper()
			cmd := exec.Command(self, args...)
			cmd.Env = append(os.Environ(), "HOME="+home, "SESSIONFS_STORE="+filepath.Join(home, "store"))
			cmd.Dir = home
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1001, Gid: 1001, Groups: []uint32{sock.Gid}}}
			return runResult(t, cmd)
		}
		r := as("new", "s1")
		require.Equal(t, 0, r.code, r.stderr)
		args := append(append([]string{"run", "--backend", "docker"}, project...), "s1", "--", "claude", "-p", "a turn")
		r = as(args...)
		require.Equal(t, 0, r.code, "%s %s", r.stdout, r.stderr)
		assert.Contains(t, r.stderr, "the container runs as 1001:1001, the owner")
		files := transcripts(t, filepath.Join(home, "store", "sessions", "s1", ".claude", "projects", "-session-workspace"))
		require.Len(t, files, 1)
		var st syscall.Stat_t
		require.NoError(t, syscall.Stat(files[0], &st))
		assert.Equal(t, uint32(1001), st.Uid)
	})
}

// reachableDir is a fresh folder every user can reach (t.TempDir's are root's alone).
func reachableDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sessionfs-e2e-user-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// dockerSocket is the engine's socket DOCKER_HOST names, else the default one.
func dockerSocket() string {
	if h, ok := strings.CutPrefix(os.Getenv("DOCKER_HOST"), "unix://"); ok {
		return h
	}
	return "/var/run/docker.sock"
}
