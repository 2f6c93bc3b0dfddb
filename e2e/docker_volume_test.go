package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/e2e/apistub"
)

// volumeDriver is the volume plugin's name in every test of a run: the engine keeps a plugin it used, and waits
// for one whose socket is gone (about a minute) at every lookup of a volume name it does not know.
var volumeDriver = "sessionfs-e2e-" + runTag

// mountVolumes mounts store with the test run's volume plugin, once its socket is there; a kill -9 of its daemon
// is taken over (the helper holds the mount).
func mountVolumes(t *testing.T, store string) *mounted {
	t.Helper()
	return mountVolumesWith(t, "", store)
}

// mountVolumesWith is mountVolumes with another build of the binary (exe; bin when empty).
func mountVolumesWith(t *testing.T, exe, store string) *mounted {
	t.Helper()
	m := mountWith(t, exe, store, "--docker-volumes="+volumeDriver)
	helper := helperPID(t, m.cmd.Process.Pid)
	t.Cleanup(func() { endTakeoverMount(t, m, helper) })
	sock := filepath.Join("/run/docker/plugins", volumeDriver+".sock")
	eventually(t, 10*time.Second, func() bool { _, err := os.Stat(sock); return err == nil }, "the plugin's socket %s: %s", sock, m.log)
	return m
}

// dockerCLI runs the docker command line and returns its output and error.
func dockerCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	start := time.Now()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if took := time.Since(start); took > 10*time.Second { // a wait for a plugin, not a run
		t.Logf("docker %s took %s", strings.Join(args, " "), took.Round(time.Millisecond))
	}
	return strings.TrimSpace(string(out)), err
}

// TestDockerVolumeIsASession: with mount --docker-volumes, the Docker CLI makes a session (docker volume create),
// mounts it at /session (--mount ...,volume-driver=, and -v with --volume-driver), lists and inspects it, and
// docker volume rm moves it to the trash. Each through the real engine and the plugin served by the mount's
// helper.
func TestDockerVolumeIsASession(t *testing.T) {
	needRootMount(t)
	engine := needDocker(t)
	_, err := exec.LookPath("docker")
	need(t, err == nil, "the docker command line (apt-get install docker.io)")
	images(t, engine, "")
	store := t.TempDir()
	driver := volumeDriver
	m := mountVolumes(t, store)
	fi, err := os.Stat(filepath.Join("/run/docker/plugins", driver+".sock"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "root's alone")
	// The engine's volumes this test made and did not remove yet, removed while the plugin serves: a name the
	// engine does not know is looked up in every driver it ever used, and one whose plugin is gone is waited
	// for a minute.
	made := map[string]bool{}
	t.Cleanup(func() {
		for v := range made {
			_, _ = dockerCLI(t, "volume", "rm", "-f", v)
		}
	})

	made["demo"] = true
	out, err := dockerCLI(t, "volume", "create", "-d", driver, "-o", "labels=team=infra", "demo")
	require.NoError(t, err, out)
	assert.Equal(t, "demo", out)
	r := cli(t, store, "show", "demo")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "team=infra")

	out, err = dockerCLI(t, "run", "--rm", "--mount", "type=volume,volume-driver="+driver+",src=demo,dst=/session", busyboxImage,
		"sh", "-c", "echo hi > /session/workspace/from-container && ls -a /session")
	require.NoError(t, err, out)
	for _, name := range []string{"workspace", "app", "mcps", ".claude", "session.json"} {
		assert.Contains(t, strings.Fields(out), name, "the session's folder at /session")
	}
	got, err := os.ReadFile(filepath.Join(store, "sessions", "demo", "workspace", "from-container"))
	require.NoError(t, err, "the container's write is in the store")
	assert.Equal(t, "hi\n", string(got))
	out, err = dockerCLI(t, "run", "--rm", "--volume-driver", driver, "-v", "demo:/session", busyboxImage, "cat", "/session/workspace/from-container")
	require.NoError(t, err, out)
	assert.Equal(t, "hi", out)

	out, err = dockerCLI(t, "volume", "inspect", "demo")
	require.NoError(t, err, out)
	var vols []struct {
		Driver, Mountpoint string
		Status             map[string]string
	}
	require.NoError(t, json.Unmarshal([]byte(out), &vols), out)
	require.Len(t, vols, 1)
	assert.Equal(t, driver, vols[0].Driver)
	assert.Equal(t, filepath.Join("/run/sessionfs/volumes", driver, "demo"), vols[0].Mountpoint, "where the plugin lays it for the engine")
	assert.Equal(t, m.session("demo"), vols[0].Status["folder"])
	assert.Equal(t, "infra", vols[0].Status["label.team"])
	assert.Equal(t, "demo", vols[0].Status["session"])
	out, err = dockerCLI(t, "volume", "ls", "-q", "--filter", "driver="+driver)
	require.NoError(t, err, out)
	assert.Contains(t, strings.Fields(out), "demo")

	out, err = dockerCLI(t, "volume", "create", "-d", driver, "-o", "sub=../../etc", "demo-opt")
	assert.Error(t, err, "a traversal in an option: %s", out)
	assert.Contains(t, out, `option sub: "../../etc" is not a folder within the session`)
	out, err = dockerCLI(t, "volume", "create", "-d", driver, "-o", "size=1G", "demo-opt")
	assert.Error(t, err, "an option sessionfs does not take: %s", out)
	assert.Contains(t, out, `unknown option "size"`)
	assert.NoDirExists(t, filepath.Join(store, "sessions", "demo-opt"))

	// A fork of demo whose volume is its workspace alone (-o from=, -o sub=).
	made["demo-ws"] = true
	out, err = dockerCLI(t, "volume", "create", "-d", driver, "-o", "from=demo", "-o", "sub=workspace", "demo-ws")
	require.NoError(t, err, out)
	out, err = dockerCLI(t, "run", "--rm", "--volume-driver", driver, "-v", "demo-ws:/work", busyboxImage, "sh", "-c", "cat /work/from-container && echo forked >> /work/from-container")
	require.NoError(t, err, out)
	assert.Equal(t, "hi", out, "the fork's workspace is the volume")
	got, err = os.ReadFile(filepath.Join(store, "sessions", "demo-ws", "workspace", "from-container"))
	require.NoError(t, err)
	assert.Equal(t, "hi\nforked\n", string(got), "written in the fork")
	got, err = os.ReadFile(filepath.Join(store, "sessions", "demo", "workspace", "from-container"))
	require.NoError(t, err)
	assert.Equal(t, "hi\n", string(got), "the origin as it was")
	out, err = dockerCLI(t, "volume", "rm", "demo-ws")
	require.NoError(t, err, out)
	delete(made, "demo-ws")

	// A volume used before it was made: the engine creates it, a session made on first use.
	made["fresh"] = true
	out, err = dockerCLI(t, "run", "--rm", "--volume-driver", driver, "-v", "fresh:/session", busyboxImage, "ls", "/session/workspace")
	require.NoError(t, err, out)
	assert.DirExists(t, filepath.Join(store, "sessions", "fresh", ".claude"))
	out, err = dockerCLI(t, "volume", "rm", "fresh")
	require.NoError(t, err, out)
	delete(made, "fresh")

	// The daemon killed: the helper, which serves the plugin and holds the mount, starts the next one; the
	// engine's calls and the volume's container go on.
	m.killServing(t)
	out, err = dockerCLI(t, "run", "--rm", "--mount", "type=volume,volume-driver="+driver+",src=demo,dst=/session", busyboxImage,
		"cat", "/session/workspace/from-container")
	require.NoError(t, err, "a volume mounted after the daemon was killed: %s", out)
	assert.Equal(t, "hi", out)

	out, err = dockerCLI(t, "volume", "rm", "demo")
	require.NoError(t, err, out)
	delete(made, "demo")
	assert.NoDirExists(t, filepath.Join(store, "sessions", "demo"))
	trashed, err := filepath.Glob(filepath.Join(store, "trash", "demo.*"))
	require.NoError(t, err)
	assert.Len(t, trashed, 1, "docker volume rm moves the session to the trash")
	r = cli(t, store, "trash", "restore", "demo")
	require.Equal(t, 0, r.code, r.stderr)
	got, err = os.ReadFile(filepath.Join(store, "sessions", "demo", "workspace", "from-container"))
	require.NoError(t, err, "restored whole")
	assert.Equal(t, "hi\n", string(got))
}

// TestDockerVolumeInCompose: contrib/docker/volume/compose.yaml as written (its image, driver and API named by its
// variables): the service works in the session's workspace with CLAUDE_CONFIG_DIR set; the real claude CLI in a
// run of it starts a conversation against the API stub, and another run carries it on from another cwd; and
// docker-compose down -v moves the session to the trash.
func TestDockerVolumeInCompose(t *testing.T) {
	needRootMount(t)
	needDocker(t)
	_, err := exec.LookPath("docker-compose")
	need(t, err == nil, "docker-compose (apt-get install docker-compose)")
	// The service is on the project's own network: the stub listens on the engine's bridge, which it reaches.
	gateway, err := dockerCLI(t, "network", "inspect", "-f", "{{(index .IPAM.Config 0).Gateway}}", "bridge")
	require.NoError(t, err, gateway)
	real, store, api := claudeOnVolumes(t, gateway+":0")

	file, err := filepath.Abs("../contrib/docker/volume/compose.yaml")
	require.NoError(t, err)
	session := "compose-" + runTag
	compose := func(args ...string) (string, error) {
		cmd := exec.Command("docker-compose", append([]string{"-f", file, "-p", "sfs" + strings.ReplaceAll(runTag, "-", "")}, args...)...)
		cmd.Env = append(os.Environ(), "SESSIONFS_IMAGE="+claudeImage, "SESSIONFS_DRIVER="+volumeDriver, "SESSION="+session,
			"ANTHROPIC_BASE_URL="+api.URL, "ANTHROPIC_API_KEY=sk-ant-test")
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	t.Cleanup(func() { _, _ = compose("down", "-v") }) // while the plugin serves
	out, err := compose("run", "--rm", "agent", "sh", "-c", "pwd && echo $CLAUDE_CONFIG_DIR && echo from-compose > note")
	require.NoError(t, err, out)
	assert.Contains(t, out, "/session/workspace\n/session/.claude")
	got, err := os.ReadFile(filepath.Join(store, "sessions", session, "workspace", "note"))
	require.NoError(t, err, "the service's write is in session %s: %s", session, out)
	assert.Equal(t, "from-compose\n", string(got))

	claudeIn := func(args ...string) string {
		out, err := compose(append([]string{"run", "--rm", "-v", real + ":/usr/local/bin/claude:ro", "-e", "HOME=/tmp",
			"-e", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}, args...)...)
		require.NoError(t, err, out)
		return out
	}
	carriedOn(t, store, session, func() string { return claudeIn("agent", "/usr/local/bin/claude", "-p", "hello from compose") },
		func() string {
			return claudeIn("-w", "/session/workspace/api", "agent", "/usr/local/bin/claude", "-p", "--continue", "again, from a subfolder")
		})

	out, err = compose("down", "-v")
	require.NoError(t, err, out)
	assert.NoDirExists(t, filepath.Join(store, "sessions", session))
	trashed, err := filepath.Glob(filepath.Join(store, "trash", session+".*"))
	require.NoError(t, err)
	assert.Len(t, trashed, 1, "compose down -v moves the session to the trash: %s", out)
}

// TestDockerVolumeClaudeResumesFromAnotherCwd: the real claude CLI in a container of volume demo (docker run
// --mount ...,volume-driver=) starts a conversation against the API stub; a second container of the volume
// carries it on with --continue from another cwd: one transcript, and sessionfs show lists one conversation.
func TestDockerVolumeClaudeResumesFromAnotherCwd(t *testing.T) {
	real, store, api := claudeOnVolumes(t, "127.0.0.1:0")
	vol := "claude-" + runTag
	t.Cleanup(func() { _, _ = dockerCLI(t, "volume", "rm", "-f", vol) }) // while the plugin serves
	claudeIn := func(workdir string, args ...string) string {
		out, err := dockerCLI(t, claudeRunArgs("--mount=type=volume,volume-driver="+volumeDriver+",src="+vol+",dst=/session", real, api.URL, workdir, args...)...)
		require.NoError(t, err, out)
		return out
	}
	carriedOn(t, store, vol, func() string { return claudeIn("/session/workspace", "hello from the first container") },
		func() string { return claudeIn("/session/workspace/api", "--continue", "again, from a subfolder") })
}

// claudeOnVolumes sets a Claude test up on volumes: the claude binary (its real path) and its image, a store
// mounted with the run's plugin, and the API stub at stubAddr.
func claudeOnVolumes(t *testing.T, stubAddr string) (claude, store string, api *apistub.Server) {
	t.Helper()
	needRootMount(t)
	real, err := filepath.EvalSymlinks(claudeBin(t))
	require.NoError(t, err)
	images(t, needDocker(t), real)
	store = t.TempDir()
	mountVolumes(t, store)
	return real, store, stub(t, stubAddr)
}

// claudeRunArgs are `docker run` (or `podman run`) arguments running the real claude CLI (real, bound in) with
// -p in claudeImage against the stub at apiURL, in workdir, with the session's volume given by volume.
func claudeRunArgs(volume, real, apiURL, workdir string, args ...string) []string {
	return append([]string{"run", "--rm", "--network", "host", volume,
		"-v", real + ":/usr/local/bin/claude:ro", "-w", workdir, "-e", "HOME=/tmp", "-e", "CLAUDE_CONFIG_DIR=/session/.claude",
		"-e", "ANTHROPIC_BASE_URL=" + apiURL, "-e", "ANTHROPIC_API_KEY=sk-ant-test", "-e", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		claudeImage, "/usr/local/bin/claude", "-p"}, args...)
}

// carriedOn checks a Claude conversation carried on across containers of session id: first starts it (claude -p
// in /session/workspace) and says the stub's reply; second carries it on from workspace/api (made for it). One
// transcript, grown by the second; sessionfs show lists one conversation.
func carriedOn(t *testing.T, store, id string, first, second func() string) {
	t.Helper()
	assert.Contains(t, first(), apistub.Reply)
	canonical := filepath.Join(store, "sessions", id, ".claude", "projects", "-session-workspace")
	files := transcripts(t, canonical)
	require.Len(t, files, 1)
	n := lineCount(t, files[0])
	require.NoError(t, os.MkdirAll(filepath.Join(store, "sessions", id, "workspace", "api"), 0o755))
	assert.NotContains(t, second(), "No conversation found")
	assert.Equal(t, files, transcripts(t, canonical), "one transcript")
	assert.Greater(t, lineCount(t, files[0]), n, "the second container carried on the first one's conversation")
	r := cli(t, store, "show", id, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var shown struct {
		Conversations []json.RawMessage `json:"conversations"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &shown), r.stdout)
	assert.Len(t, shown.Conversations, 1, "sessionfs show lists one conversation: %s", r.stdout)
}

// devcontainerBin is the devcontainers CLI (make e2e installs the pinned one; or SESSIONFS_DEVCONTAINER).
func devcontainerBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SESSIONFS_DEVCONTAINER"); p != "" {
		_, err := os.Stat(p)
		need(t, err == nil, "the devcontainers CLI at $SESSIONFS_DEVCONTAINER (make e2e installs it)")
		return p
	}
	p, err := exec.LookPath("devcontainer")
	need(t, err == nil, "the devcontainers CLI (npm install @devcontainers/cli; make e2e installs it; or set SESSIONFS_DEVCONTAINER)")
	return p
}

// TestDockerVolumeInDevcontainer: contrib/docker/volume/devcontainer.json as written (its image, driver, network
// and session named by its variables), with the real devcontainers CLI: devcontainer up on one folder, the real
// claude CLI started in it against the API stub; a dev container of another folder on the same session carries
// the conversation on from another cwd. One transcript; sessionfs show lists one conversation.
func TestDockerVolumeInDevcontainer(t *testing.T) {
	devcontainer := devcontainerBin(t)
	real, store, api := claudeOnVolumes(t, "127.0.0.1:0")
	session := "devc-" + runTag
	t.Cleanup(func() { _, _ = dockerCLI(t, "volume", "rm", "-f", session) }) // while the plugin serves, after the containers
	config, err := filepath.Abs("../contrib/docker/volume/devcontainer.json")
	require.NoError(t, err)
	devc := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(devcontainer, args...)
		cmd.Env = append(os.Environ(), "SESSION="+session, "SESSIONFS_IMAGE="+claudeImage, "SESSIONFS_DRIVER="+volumeDriver,
			"SESSIONFS_NETWORK=host", "ANTHROPIC_BASE_URL="+api.URL, "ANTHROPIC_API_KEY=sk-ant-test")
		cmd.Env = append(cmd.Env, "TMPDIR="+t.TempDir()) // the CLI's own files
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "devcontainer %s: %s", strings.Join(args, " "), out)
		return string(out)
	}
	// up starts the dev container of a project folder of its own; it is removed when the test ends.
	up := func() string {
		folder := t.TempDir()
		t.Cleanup(func() {
			ids, _ := dockerCLI(t, "ps", "-aq", "--filter", "label=devcontainer.local_folder="+folder)
			for _, id := range strings.Fields(ids) {
				_, _ = dockerCLI(t, "rm", "-f", id)
			}
		})
		out := devc("up", "--workspace-folder", folder, "--config", config, "--mount", "type=bind,source="+real+",target=/usr/local/bin/claude")
		require.Contains(t, out, `"outcome":"success"`)
		return folder
	}
	claudeIn := func(folder, script string) string {
		return devc("exec", "--workspace-folder", folder, "--config", config, "--remote-env", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			"sh", "-c", script)
	}

	first, second := up(), up()
	carriedOn(t, store, session, func() string {
		out := claudeIn(first, `pwd && echo "$CLAUDE_CONFIG_DIR" && claude -p "hello from a dev container"`)
		assert.Contains(t, out, "/session/workspace\n/session/.claude\n", "the session's workspace is the work folder")
		return out
	}, func() string {
		out := claudeIn(second, `cd api && pwd && claude -p --continue "again, from another dev container and cwd"`)
		assert.Contains(t, out, "/session/workspace/api")
		return out
	})
}

// TestDockerVolumeSystemdUnit: contrib/systemd/sessionfs-volumes.service's commands as written (the binary, store,
// mountpoint and driver name this test's): it is ordered before docker.service; ExecStart mounts and tells systemd
// it serves (READY=1) with the plugin's socket there, ExecReload hands the mount over with the plugin answering on,
// ExecStop unmounts and the socket and the stages go.
func TestDockerVolumeSystemdUnit(t *testing.T) {
	needRootMount(t)
	b, err := os.ReadFile("../contrib/systemd/sessionfs-volumes.service")
	require.NoError(t, err)
	unit := string(b)
	assert.Contains(t, strings.Split(unit, "\n"), "Before=docker.service", "the plugin starts before the engine, and stops after it")
	store, mnt := t.TempDir(), filepath.Join(t.TempDir(), "mnt")
	replacer := strings.NewReplacer("/usr/local/bin/sessionfs", bin, "/srv/agent-sessions", mnt, "/var/lib/sessionfs", store,
		"--docker-volumes", "--docker-volumes="+volumeDriver)
	directive := func(key string) []string {
		for _, line := range strings.Split(unit, "\n") {
			if v, ok := strings.CutPrefix(line, key+"="); ok {
				return strings.Fields(replacer.Replace(v))
			}
		}
		t.Fatalf("the unit has no %s", key)
		return nil
	}
	env := append(os.Environ(), directive("Environment")...)
	notify := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notify, Net: "unixgram"})
	require.NoError(t, err)
	defer conn.Close()
	run := func(key string) *exec.Cmd {
		argv := directive(key)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(env, "NOTIFY_SOCKET="+notify)
		return cmd
	}
	log := &syncBuffer{}
	start := run("ExecStart")
	start.Stdout, start.Stderr = log, log
	start.WaitDelay = 10 * time.Second
	require.NoError(t, start.Start())
	t.Cleanup(func() {
		if isFUSEMount(mnt) || staleMount(mnt) {
			_ = run("ExecStop").Run()
		}
		_ = start.Process.Kill()
		_ = start.Wait()
	})
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	buf := make([]byte, 256)
	n, err := conn.Read(buf)
	require.NoError(t, err, "READY=1 from ExecStart: %s", log)
	assert.Contains(t, string(buf[:n]), "READY=1")
	sock := filepath.Join("/run/docker/plugins", volumeDriver+".sock")
	eventually(t, 10*time.Second, func() bool { _, err := os.Stat(sock); return err == nil }, "the plugin's socket: %s", log)
	plugin := pluginClient(t, volumeDriver)
	code, out := plugin("/VolumeDriver.Create", `{"Name":"unit"}`)
	require.Equal(t, 200, code, out)
	assert.DirExists(t, filepath.Join(store, "sessions", "unit", "workspace"), "the unit's store")

	reload, err := run("ExecReload").CombinedOutput()
	require.NoError(t, err, "ExecReload: %s", reload)
	assert.Contains(t, string(reload), "is served by sessionfs")
	code, out = plugin("/VolumeDriver.Get", `{"Name":"unit"}`)
	require.Equal(t, 200, code, "the plugin answers after a reload: %s", out)
	assert.Contains(t, out, `"session":"unit"`)

	stop, err := run("ExecStop").CombinedOutput()
	require.NoError(t, err, "ExecStop: %s", stop)
	eventually(t, 20*time.Second, func() bool { _, err := os.Stat(sock); return os.IsNotExist(err) }, "the plugin's socket goes with the mount")
	assert.False(t, isFUSEMount(mnt))
	assert.NoDirExists(t, filepath.Join("/run/sessionfs/volumes", volumeDriver), "its stages go too")
}

// pluginClient calls the volume plugin named name on its socket, as the engine does (path, JSON body): the
// status code and the answer.
func pluginClient(t *testing.T, name string) func(path, body string) (int, string) {
	sock := filepath.Join("/run/docker/plugins", name+".sock")
	c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	return func(path, body string) (int, string) {
		t.Helper()
		resp, err := c.Post("http://plugin"+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(out)
	}
}

// TestDockerVolumeGlobalOnASharedStore: two hosts (two MooseFS clients of one store, each with its mount and its
// plugin) serve one store's sessions as volumes of global scope. A session mounted by a container on host A is
// refused on host B, naming A's holder, until A's last container unmounts it. The plugins are called on their
// sockets as the engine calls them (two engines are not at hand; the engine would remember both names).
func TestDockerVolumeGlobalOnASharedStore(t *testing.T) {
	needRootMount(t)
	cluster := startMooseFS(t)
	hostA, hostB := cluster.mount(t, "host-a"), cluster.mount(t, "host-b")
	storeA, storeB := filepath.Join(hostA.mnt, "store"), filepath.Join(hostB.mnt, "store")
	ok(t, storeA, "new", "web")
	nameA, nameB := "sfs-a-"+runTag, "sfs-b-"+runTag
	mount(t, storeA, "--docker-volumes="+nameA)
	mount(t, storeB, "--docker-volumes="+nameB)
	a, b := pluginClient(t, nameA), pluginClient(t, nameB)
	eventually(t, 10*time.Second, func() bool {
		_, err := os.Stat(filepath.Join("/run/docker/plugins", nameA+".sock"))
		_, errB := os.Stat(filepath.Join("/run/docker/plugins", nameB+".sock"))
		return err == nil && errB == nil
	}, "both plugins' sockets")
	for _, p := range []func(string, string) (int, string){a, b} {
		_, out := p("/VolumeDriver.Capabilities", "")
		assert.JSONEq(t, `{"Capabilities":{"Scope":"global"}}`, out, "a shared store's volumes are global")
	}

	code, out := a("/VolumeDriver.Mount", `{"Name":"web","ID":"container-on-a"}`)
	require.Equal(t, 200, code, out)
	code, out = b("/VolumeDriver.Mount", `{"Name":"web","ID":"container-on-b"}`)
	assert.Equal(t, 500, code, "one host at a time: %s", out)
	assert.Contains(t, out, "session web is running on host")
	assert.NoDirExists(t, filepath.Join("/run/sessionfs/volumes", nameB, "web"), "nothing laid on B")
	r := cli(t, storeB, "run", "--backend", "local", "web", "--", "true")
	assert.NotEqual(t, 0, r.code, "a run on B is refused too: %s", r.stdout)

	code, out = a("/VolumeDriver.Unmount", `{"Name":"web","ID":"container-on-a"}`)
	require.Equal(t, 200, code, out)
	code, out = b("/VolumeDriver.Mount", `{"Name":"web","ID":"container-on-b"}`)
	require.Equal(t, 200, code, "A's container is gone: B gets the session: %s", out)
	laid := filepath.Join("/run/sessionfs/volumes", nameB, "web")
	assert.DirExists(t, filepath.Join(laid, "workspace"), "laid on B")
	code, out = b("/VolumeDriver.Unmount", `{"Name":"web","ID":"container-on-b"}`)
	require.Equal(t, 200, code, out)
}
