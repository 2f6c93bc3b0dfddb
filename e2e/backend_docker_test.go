package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/e2e/apistub"
	"github.com/sessionfs/sessionfs/layout"
)

// TestDockerSessionAtSlashSession: the container sees the session at /session through the mount, its writes land
// in the store, the exit code comes back, no other session is visible, and the run is recorded.
func TestDockerSessionAtSlashSession(t *testing.T) {
	cli := needDocker(t)
	images(t, cli, "")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ok(t, store, "new", "other")
	m := mount(t, store)

	r := dockerRun(t, store, "--image", busyboxImage, "s1", "--", "sh", "-c",
		`echo from-container > /session/workspace/out.txt; pwd; echo "$CLAUDE_CONFIG_DIR"; ls -a /session/..; exit 5`)
	assert.Equal(t, 5, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.GreaterOrEqual(t, len(lines), 2, r.stdout)
	assert.Equal(t, "/session/workspace", lines[0])
	assert.Equal(t, "/session/.claude", lines[1])
	assert.NotContains(t, r.stdout, "other", "no other session is visible in the container")
	assert.NotContains(t, r.stdout, "sessions")
	assert.NotContains(t, r.stderr, "not mounted", "the mounted folder was bound")

	b, err := os.ReadFile(filepath.Join(m.session("s1"), "workspace", "out.txt"))
	require.NoError(t, err, "visible through the mount")
	assert.Equal(t, "from-container\n", string(b))
	assert.FileExists(t, filepath.Join(store, "sessions", "s1", "workspace", "out.txt"), "and in the store")

	var meta layout.Meta
	raw, err := os.ReadFile(filepath.Join(store, "sessions", "s1", "session.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &meta))
	require.Len(t, meta.Runs, 1)
	assert.Equal(t, "docker", meta.Runs[0].Backend)
	assert.Equal(t, busyboxImage, meta.Runs[0].Image)
	assert.Equal(t, 5, meta.Runs[0].ExitCode)
	assert.False(t, meta.Runs[0].End.Before(meta.Runs[0].Start))

	// stdin reaches the container with -i.
	in := strings.NewReader("piped\n")
	rr := cliStdin(t, store, in, "run", "--backend", "docker", "--image", busyboxImage, "-i", "s1", "--", "cat")
	assert.Equal(t, 0, rr.code, rr.stderr)
	assert.Equal(t, "piped\n", rr.stdout)
}

// TestDockerStrictAndHome: --strict makes app/ and mcps/ read-only; --home gives tools a HOME whose .claude is
// the session's.
func TestDockerStrictAndHome(t *testing.T) {
	cli := needDocker(t)
	images(t, cli, "")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	mount(t, store)

	r := dockerRun(t, store, "--image", busyboxImage, "--strict", "s1", "--", "sh", "-c",
		`touch /session/workspace/ok && ! touch /session/app/x 2>/dev/null && ! touch /session/mcps/x 2>/dev/null && ls /session/app`)
	assert.Equal(t, 0, r.code, "strict: %s %s", r.stdout, r.stderr)
	assert.NoFileExists(t, filepath.Join(store, "sessions", "s1", "app", "x"))
	assert.FileExists(t, filepath.Join(store, "sessions", "s1", "workspace", "ok"))

	r = dockerRun(t, store, "--image", busyboxImage, "--home", "s1", "--", "sh", "-c",
		`echo "$HOME"; cat "$HOME/.claude/settings.json" >/dev/null && echo settings-ok`)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "/session/home\nsettings-ok\n", r.stdout)
}

// TestDockerOtherUser: a container running as another uid needs --allow-other; with it, it writes as itself.
func TestDockerOtherUser(t *testing.T) {
	cli := needDocker(t)
	images(t, cli, "")
	need(t, os.Geteuid() == 0, "mounting for other users needs root here")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	r := dockerRun(t, store, "--image", busyboxImage, "--user", "1000", "s1", "--", "true")
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "--allow-other")
	m.stop(t)

	m.start(t, "--allow-other")
	// The session's workspace belongs to root; let the agent user write there, as a user would.
	require.NoError(t, os.Chmod(filepath.Join(store, "sessions", "s1", "workspace"), 0o777))
	r = dockerRun(t, store, "--image", busyboxImage, "--user", "1000:1000", "s1", "--", "sh", "-c", "id -u; touch /session/workspace/mine")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "1000\n", r.stdout)
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(filepath.Join(store, "sessions", "s1", "workspace", "mine"), &st))
	assert.Equal(t, uint32(1000), st.Uid, "the file belongs to the container's user")
}

// TestDockerCrossEnvironmentResume: a conversation started in a container resumes on the host from the host
// path of the workspace, and one started on the host resumes in a container.
func TestDockerCrossEnvironmentResume(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c claudeCLI) {
		claude := c.path
		cli := needDocker(t)
		real, err := filepath.EvalSymlinks(claude)
		require.NoError(t, err)
		images(t, cli, real)
		store := t.TempDir()
		ok(t, store, "new", "s1")
		m := mount(t, store)
		// The container shares the host's network namespace, so it reaches the stub on the loopback.
		api := stub(t, "127.0.0.1:0")
		inContainer := func(args ...string) result {
			base := []string{"--image", claudeImage, "--network", "host", "-v", real + ":/usr/local/bin/claude:ro",
				"-e", "ANTHROPIC_BASE_URL=" + api.URL, "-e", "ANTHROPIC_API_KEY=sk-ant-test",
				"-e", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "-e", "HOME=/tmp", "s1", "--", "/usr/local/bin/claude"}
			return dockerRun(t, store, append(base, args...)...)
		}
		cfg := filepath.Join(m.session("s1"), ".claude")
		ws := filepath.Join(m.session("s1"), "workspace")
		canonical := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")

		// Container first, then the host.
		r := inContainer("-p", "hello from the container")
		require.Equal(t, 0, r.code, "%s %s", r.stdout, r.stderr)
		assert.Contains(t, r.stdout, apistub.Reply)
		files := transcripts(t, canonical)
		require.Len(t, files, 1)
		uuid := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
		n := lineCount(t, files[0])
		out, err := claudeRun(t, claude, api.URL, cfg, ws, "-p", "--resume", uuid, "now on the host")
		require.NoError(t, err, out)
		assert.NotContains(t, out, "No conversation found")
		require.Len(t, transcripts(t, canonical), 1)
		assert.Greater(t, lineCount(t, files[0]), n, "the host resumed the container's conversation")

		// Host first, then a container.
		require.NoError(t, os.Remove(files[0]))
		out, err = claudeRun(t, claude, api.URL, cfg, ws, "-p", "hello from the host")
		require.NoError(t, err, out)
		files = transcripts(t, canonical)
		require.Len(t, files, 1)
		uuid = strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
		n = lineCount(t, files[0])
		r = inContainer("-p", "--resume", uuid, "now in the container")
		require.Equal(t, 0, r.code, "%s %s", r.stdout, r.stderr)
		assert.NotContains(t, r.stdout+r.stderr, "No conversation found")
		require.Len(t, transcripts(t, canonical), 1)
		assert.Greater(t, lineCount(t, files[0]), n, "the container resumed the host's conversation")
		b, err := os.ReadFile(files[0])
		require.NoError(t, err)
		assert.Contains(t, string(b), `"cwd":"/session/workspace"`)
		assert.Contains(t, string(b), `"cwd":"`+ws+`"`)
	})
}

// TestDockerErrors: a stopped engine, a missing image and a missing session each give one clear line.
func TestDockerErrors(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	oneLineErr := func(r result, want string) {
		t.Helper()
		assert.NotEqual(t, 0, r.code)
		assert.Contains(t, r.stderr, want)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, "one line: %q", r.stderr)
	}
	r := cliIn(t, store, "", []string{"DOCKER_HOST=unix://" + filepath.Join(t.TempDir(), "no-docker.sock")},
		"run", "--backend", "docker", "--image", busyboxImage, "s1", "--", "true")
	oneLineErr(lastLine(r), "cannot reach the Docker engine")
	oneLineErr(dockerRun(t, store, "--image", busyboxImage, "missing", "--", "true"), "no such session")

	cli := needDocker(t)
	images(t, cli, "")
	oneLineErr(lastLine(dockerRun(t, store, "--image", "sessionfs-e2e-no-such-image:1", "s1", "--", "true")),
		"is not on this machine and pulling it failed")
}

// lastLine drops the warning that the store is not mounted, which precedes the error when it is not.
func lastLine(r result) result {
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	r.stderr = lines[len(lines)-1]
	return r
}

// TestDockerInterruptStopsContainer: Ctrl-C (SIGINT to sessionfs) stops the container, which is then removed.
func TestDockerInterruptStopsContainer(t *testing.T) {
	cli := needDocker(t)
	images(t, cli, "")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	cmd := exec.Command(bin, "run", "--backend", "docker", "--image", busyboxImage, "s1", "--",
		"sh", "-c", `trap "exit 130" TERM; echo started; sleep 60 & wait`)
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	startUntil(t, cmd, "started\n")
	start := time.Now()
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	err := cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 130, exit.ExitCode(), "the command's own exit code")
	assert.Less(t, time.Since(start), 15*time.Second)
	list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
		// This run's image: another test run on the machine may have a session s1 in a container too.
		Filters: filters.NewArgs(filters.Arg("label", "sessionfs.session=s1"), filters.Arg("ancestor", busyboxImage))})
	require.NoError(t, err)
	assert.Empty(t, list, "the container is removed")
}

// TestDockerIsolation: a container bound to one session reaches neither another session nor the store, by
// "..", by symlinks planted in the session, or through /proc.
func TestDockerIsolation(t *testing.T) {
	cli := needDocker(t)
	images(t, cli, "")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ok(t, store, "new", "s2")
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "s2", "workspace", "secret"), []byte("topsecret"), 0o644))
	m := mount(t, store)
	ws1 := filepath.Join(store, "sessions", "s1", "workspace")
	require.NoError(t, os.Symlink("../../s2/workspace", filepath.Join(ws1, "rel")))
	require.NoError(t, os.Symlink(m.session("s2"), filepath.Join(ws1, "abs")))
	require.NoError(t, os.Symlink(filepath.Join(store, "sessions", "s2"), filepath.Join(ws1, "store")))

	r := dockerRun(t, store, "--image", busyboxImage, "s1", "--", "sh", "-c", `
		for p in /session/workspace/rel/secret /session/workspace/abs/workspace/secret /session/workspace/store/workspace/secret \
			/session/../s2/workspace/secret /proc/1/root/../s2/workspace/secret /proc/self/root/session/../s2/workspace/secret; do
			cat "$p" 2>/dev/null && echo "LEAK via $p"
		done
		echo x > /session/../planted 2>/dev/null
		ls /session/.. /proc/1/root/..
		true`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "topsecret")
	assert.NotContains(t, r.stdout, "LEAK")
	assert.NotRegexp(t, `(?m)^(s2|sessions)$`, r.stdout, "no other session, no store folder")
	assert.NoFileExists(t, filepath.Join(store, "sessions", "planted"))
	assert.NoFileExists(t, filepath.Join(store, "planted"))
}

// TestDockerDaemonCrash: a container started before the daemon dies gets clear errors on the views, not a hang, and
// its workspace (bound from the store) keeps working.
func TestDockerDaemonCrash(t *testing.T) {
	cli := needDocker(t)
	images(t, cli, "")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	cmd := exec.Command(bin, "run", "--backend", "docker", "--image", busyboxImage, "s1", "--", "sh", "-c",
		`echo up; while ls /session/.claude/projects/-other-cwd >/dev/null; do sleep 0.1; done; ls . >/dev/null && exit 9`) // the cwd, the workspace bind, still works
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	startUntil(t, cmd, "up\n")
	m.kill(t)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		assert.Equal(t, 9, exit.ExitCode())
		assert.Regexp(t, `not connected|connection abort|Input/output error`, stderr.String(), "the container saw a clear error")
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the container hangs on the dead mount")
	}
}

// TestDockerInterruptTwiceKills: a Ctrl-C says that it stops the container (it waited 10 s in silence when the
// command ignores SIGTERM), and a second one kills it at once.
func TestDockerInterruptTwiceKills(t *testing.T) {
	cli := needDocker(t)
	images(t, cli, "")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	cmd := exec.Command(bin, "run", "--backend", "docker", "--image", busyboxImage, "s1", "--",
		"sh", "-c", `trap "" TERM; echo started; while :; do sleep 1; done`)
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	startUntil(t, cmd, "started\n")
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	eventually(t, 5*time.Second, func() bool { return strings.Contains(stderr.String(), "stopping the container") },
		"the first interrupt says what it does: %s", stderr.String())
	start := time.Now()
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	err := cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 137, exit.ExitCode(), "killed")
	t.Logf("killed %v after the second interrupt", time.Since(start))
	assert.Less(t, time.Since(start), 7*time.Second, "the second interrupt kills at once, not when docker stop's 10 s from the first end")
	assert.Contains(t, stderr.String(), "killing the container")
}

func TestDockerExitCodes(t *testing.T) {
	images(t, needDocker(t), "")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	assert.Equal(t, 127, dockerRun(t, store, "--image", busyboxImage, "s1", "--", "no-such-command-xyz").code)
	assert.Equal(t, 126, dockerRun(t, store, "--image", busyboxImage, "s1", "--", "/etc/passwd").code)
	assert.Equal(t, 125, dockerRun(t, store, "--image", "no-such-image-xyz:never", "s1", "--", "true").code)
}

// A run with an anonymous volume (-v /path) leaves no volume behind.
func TestDockerRunLeavesNoVolume(t *testing.T) {
	cli := needDocker(t)
	images(t, cli, "")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	count := func() int {
		out, err := exec.Command("docker", "volume", "ls", "-q").Output()
		require.NoError(t, err)
		return len(strings.Fields(string(out)))
	}
	before := count()
	r := dockerRun(t, store, "--image", busyboxImage, "-v", "/scratch", "s1", "--", "touch", "/scratch/x")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, before, count(), "the anonymous volume went with the container")
}

// TestDockerHeavyFoldersAreNative: in a run on the mount, workspace/, app/, mcps/ and the canonical transcript
// folder are binds of the store (no FUSE round trip), /session and .claude stay the mount's (views work), and
// what the container writes through the binds shows through the mount within 100 ms.
func TestDockerHeavyFoldersAreNative(t *testing.T) {
	images(t, needDocker(t), "")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)

	r := inContainer(t, store, "s1", `cat /proc/self/mountinfo`)
	require.Equal(t, 0, r.code, r.stderr)
	types := fstypes(r.stdout)
	assert.True(t, strings.HasPrefix(types["/session"], "fuse"), "/session is the mount: %v", types)
	for _, p := range []string{"/session/workspace", "/session/app", "/session/mcps", "/session/.claude/projects/-session-workspace"} {
		require.Contains(t, types, p, "%s is bound", p)
		assert.False(t, strings.HasPrefix(types[p], "fuse"), "%s is bound from the store, not through FUSE: %s", p, types[p])
	}
	assertNoSuidNoDev(t, r.stdout, "/session/workspace", "/session/app", "/session/mcps", "/session/.claude/projects/-session-workspace")

	// Warm the mount's caches, then let a container write through its native bind.
	viaMount := filepath.Join(m.session("s1"), "workspace", "from-bind.txt")
	require.True(t, missing(viaMount))
	_, err := os.ReadDir(filepath.Join(m.session("s1"), "workspace"))
	require.NoError(t, err)
	cmd := exec.Command(bin, "run", "--backend", "docker", "--image", busyboxImage, "s1", "--", "sh", "-c",
		`echo bind > /session/workspace/from-bind.txt && echo '{"type":"user"}' >> /session/.claude/projects/-session-workspace/t.jsonl && echo written && sleep 2`)
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }() // Ctrl-C: the container is stopped and removed
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "written\n", line)
	within100ms(t, "a file written through a native bind", func() bool {
		b, err := os.ReadFile(viaMount)
		return err == nil && string(b) == "bind\n"
	})
	within100ms(t, "a transcript written through a native bind, in another cwd's view", func() bool {
		_, err := os.Stat(filepath.Join(m.session("s1"), ".claude", "projects", "-home-u-p", "t.jsonl"))
		return err == nil
	})
}

// TestDockerWorkspaceSwappedForALink: a container that replaces its workspace with a link to a host folder
// between runs gets a clear refusal on the next run, never a bind of that folder, mounted or not.
func TestDockerWorkspaceSwappedForALink(t *testing.T) {
	images(t, needDocker(t), "")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	secret := hostSecret(t)
	r := inContainer(t, store, "s1", fmt.Sprintf(`mv /session/workspace /session/ws-old && ln -s %s /session/workspace`, secret))
	require.Equal(t, 0, r.code, r.stderr)
	for _, mounted := range []bool{false, true} {
		if mounted {
			mount(t, store)
		}
		r = inContainer(t, store, "s1", `cat /session/workspace/secret; echo owned > /session/workspace/planted; ls /session/workspace`)
		assert.NotContains(t, r.stdout+r.stderr, hostMarker, "mounted=%v", mounted)
		assertSecretUntouched(t, secret)
		if mounted {
			assert.NotEqual(t, 0, r.code)
			assert.Contains(t, r.stderr, "not a folder of the session")
		}
	}
}
