package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/internal/testimage"
)

// Podman serves the Docker Engine API on a socket (podman system service), so run --backend docker works against
// it with DOCKER_HOST: rootful, through root's socket, and rootless, as an unprivileged user with a socket of
// its own, whose container's files come out owned by that user on the host.

// podmanService is a `podman system service` this test started, as uid (0: root), on its own socket.
type podmanService struct {
	sock string
	conf string // its containers.conf
	cli  *client.Client
	env  []string // what a client process of this user needs: DOCKER_HOST, and for a user its runtime dir
	stop func()
}

func needPodman(t *testing.T) {
	t.Helper()
	_, err := exec.LookPath("podman")
	need(t, err == nil, "Podman: podman is missing (apt-get install podman)")
	need(t, os.Geteuid() == 0, "Podman: the tests start services as root and as a test user")
}

// startPodman starts a Podman API service as u (nil: root) and imports the busybox test image into it. Cleanup
// stops the service and every container it ran.
func startPodman(t *testing.T, u *user.User) *podmanService {
	t.Helper()
	dir := t.TempDir()
	if u != nil {
		// Its own folder, which the user can reach (a test's temporary folders are root's, 0700).
		var err error
		dir, err = os.MkdirTemp(u.HomeDir, "podman-")
		require.NoError(t, err)
	}
	sock := filepath.Join(dir, "podman.sock")
	cmd := exec.Command("podman", "system", "service", "--time=0", "unix://"+sock)
	// Podman raises a container's open-file and process limits to its own defaults, which needs
	// CAP_SYS_RESOURCE; where root lacks it (a sandboxed machine) the containers keep this process's limits.
	conf := filepath.Join(dir, "containers.conf")
	var nofile, nproc unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile))
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NPROC, &nproc))
	// Podman lowers its own process limit below this process's, so the containers get a modest one.
	nproc.Max = min(nproc.Max, 4096)
	text := fmt.Sprintf("[containers]\ndefault_ulimits = [\"nofile=%d:%d\", \"nproc=%d:%d\"]\n", nofile.Max, nofile.Max, nproc.Max, nproc.Max)
	// crun (Podman's default runtime) refuses a host whose cgroups are v1 or hybrid ("cgroups in hybrid mode not
	// supported"); runc, which Docker uses, takes them.
	var cg unix.Statfs_t
	if unix.Statfs("/sys/fs/cgroup", &cg) == nil && cg.Type != unix.CGROUP2_SUPER_MAGIC {
		text += "[engine]\nruntime = \"runc\"\ncgroup_manager = \"cgroupfs\"\n"
	}
	require.NoError(t, os.WriteFile(conf, []byte(text), 0o644))
	env := []string{"CONTAINERS_CONF=" + conf}
	if u != nil {
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		run := filepath.Join(dir, "run")
		require.NoError(t, os.Mkdir(run, 0o700))
		require.NoError(t, os.Chown(run, uid, gid))
		require.NoError(t, os.Chown(dir, uid, gid))
		require.NoError(t, os.Chown(conf, uid, gid))
		env = append(env, "HOME="+u.HomeDir, "USER="+u.Username, "XDG_RUNTIME_DIR="+run, "PATH=/usr/sbin:/usr/bin:/sbin:/bin")
		cmd.Env = env
		cmd.Dir = u.HomeDir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, Setpgid: true}
	} else {
		cmd.Env = append(os.Environ(), env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	t.Cleanup(stop)
	cli, err := client.NewClientWithOpts(client.WithHost("unix://"+sock), client.WithAPIVersionNegotiation())
	require.NoError(t, err)
	t.Cleanup(func() { cli.Close() })
	eventually(t, 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := cli.Ping(ctx)
		return err == nil
	}, "podman system service did not answer: %s", log)
	p := &podmanService{sock: sock, conf: conf, cli: cli, env: append(env[1:], "DOCKER_HOST=unix://"+sock), stop: stop}
	require.NoError(t, testimage.Import(cli, busyboxImage, nil), "import the test image into Podman: %s", log)
	t.Cleanup(func() {
		// The containers this service ran go with it (sessionfs removes its own; a failed test may leave one).
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = exec.CommandContext(ctx, "podman", "--url", "unix://"+sock, "rm", "-af").Run()
		_ = exec.CommandContext(ctx, "podman", "--url", "unix://"+sock, "rmi", "-f", busyboxImage).Run()
	})
	return p
}

// TestPodmanRootful: run --backend docker against root's Podman service, on the plain store and through the
// mount (views and the native binds of the heavy folders included).
func TestPodmanRootful(t *testing.T) {
	needPodman(t)
	p := startPodman(t, nil)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	run := func(script string) result {
		return cliIn(t, store, "", p.env, "run", "--backend", "docker", "--image", busyboxImage, "s1", "--", "sh", "-c", script)
	}
	r := run(`echo plain > /session/workspace/plain.txt; id -u`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "0\n", r.stdout)
	assert.FileExists(t, filepath.Join(store, "sessions", "s1", "workspace", "plain.txt"))

	m := mount(t, store)
	r = run(`echo mounted > /session/workspace/mounted.txt && mkdir -p /session/.claude/projects/-home-u-proj &&
		echo '{"type":"user"}' > /session/.claude/projects/-home-u-proj/0b7c6a1e-1111-2222-3333-444455556666.jsonl &&
		grep ' /session/workspace ' /proc/self/mountinfo`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "fuse", "the workspace is the store's folder, not FUSE's")
	assert.FileExists(t, filepath.Join(store, "sessions", "s1", "workspace", "mounted.txt"))
	assert.FileExists(t, filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace",
		"0b7c6a1e-1111-2222-3333-444455556666.jsonl"), "another cwd's folder is a view of the canonical one")
	assert.FileExists(t, filepath.Join(m.session("s1"), "workspace", "mounted.txt"))

	r = cliIn(t, store, "", p.env, "doctor")
	assert.Regexp(t, `docker +Podman \d`, r.stdout, "doctor names the engine")
}

// testUser makes a throwaway user with subordinate ids for rootless Podman, removed with its home at cleanup.
func testUser(t *testing.T) *user.User {
	t.Helper()
	name := fmt.Sprintf("sfspod%d", os.Getpid()%100000)
	_ = exec.Command("userdel", "-r", name).Run()
	out, err := exec.Command("useradd", "--create-home", "--shell", "/bin/sh", name).CombinedOutput()
	require.NoError(t, err, "useradd: %s", out)
	t.Cleanup(func() {
		// userdel refuses a user whose processes are still going: killed, and tried again while they die.
		for i := 0; i < 50; i++ {
			_ = exec.Command("pkill", "-KILL", "-u", name).Run()
			if exec.Command("userdel", "-r", name).Run() == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		// userdel leaves the user's subordinate ids behind on some versions.
		for _, f := range []string{"/etc/subuid", "/etc/subgid"} {
			if b, err := os.ReadFile(f); err == nil {
				var keep []string
				for _, line := range strings.SplitAfter(string(b), "\n") {
					if !strings.HasPrefix(line, name+":") {
						keep = append(keep, line)
					}
				}
				_ = os.WriteFile(f, []byte(strings.Join(keep, "")), 0o644)
			}
		}
	})
	u, err := user.Lookup(name)
	require.NoError(t, err)
	uid, _ := strconv.Atoi(u.Uid)
	// Subordinate ids of its own: useradd gives a range where login.defs says so (Debian's does); else one far
	// above real users.
	if b, _ := os.ReadFile("/etc/subuid"); !strings.Contains("\n"+string(b), "\n"+name+":") {
		lo := 1_000_000 + (uid%1000)*65536
		out, err = exec.Command("usermod", "--add-subuids", fmt.Sprintf("%d-%d", lo, lo+65535),
			"--add-subgids", fmt.Sprintf("%d-%d", lo, lo+65535), name).CombinedOutput()
		require.NoError(t, err, "usermod: %s", out)
	}
	return u
}

// TestPodmanRootless: an unprivileged user with its own Podman socket runs a session of its own store; the
// files the container's root writes are the user's on the host (not a subordinate id's).
func TestPodmanRootless(t *testing.T) {
	needPodman(t)
	_, err := exec.LookPath("newuidmap")
	need(t, err == nil, "rootless Podman: newuidmap is missing (apt-get install uidmap)")
	u := testUser(t)
	p := startPodman(t, u)
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	store := filepath.Join(u.HomeDir, "store")
	as := func(args ...string) result {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(p.env, "SESSIONFS_STORE="+store)
		cmd.Dir = u.HomeDir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		return runResult(t, cmd)
	}
	r := as("new", "s1")
	require.Equal(t, 0, r.code, r.stderr)
	r = as("run", "--backend", "docker", "--image", busyboxImage, "--network", "none", "s1", "--",
		"sh", "-c", "echo made > /session/workspace/made.txt && id -u")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "0\n", r.stdout, "root inside the user's namespace")
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(filepath.Join(store, "sessions", "s1", "workspace", "made.txt"), &st))
	assert.Equal(t, uint32(uid), st.Uid, "the container's file is the user's on the host, not a subordinate id's")
	r = as("doctor")
	assert.Regexp(t, `docker +Podman \d.*rootless`, r.stdout, "doctor names the engine and its mode")

	// The user's own mount (fusermount3, no binds): the container's transcript in another cwd's folder lands in the
	// canonical one, owned by the user. Podman's rootless namespace was made before the mount: where the host's
	// mounts do not propagate into it (this machine's / is private), the engine does not see the mount, and the
	// run is refused before it starts rather than write beneath the mountpoint, until Podman makes its namespace
	// again.
	_, err = exec.LookPath("fusermount3")
	need(t, err == nil, "rootless Podman on the mount: fusermount3 is missing (apt-get install fuse3)")
	mnt := filepath.Join(u.HomeDir, "mnt")
	r = as("mount", "--daemon", "--log", filepath.Join(u.HomeDir, "mount.log"), mnt)
	require.Equal(t, 0, r.code, r.stderr)
	t.Cleanup(func() { as("unmount", mnt) })
	const conv = "0b7c6a1e-1111-2222-3333-444455556666"
	script := "mkdir -p /session/.claude/projects/-home-u-proj && echo '{}' > /session/.claude/projects/-home-u-proj/" + conv + ".jsonl"
	runIt := func() result {
		return as("run", "--backend", "docker", "--image", busyboxImage, "--network", "none", "s1", "--", "sh", "-c", script)
	}
	if r = runIt(); r.code != 0 {
		assert.Equal(t, 125, r.code)
		assert.Contains(t, r.stderr, "does not see the sessionfs mount")
		assert.Contains(t, r.stderr, "podman system migrate")
		p.stop()
		migrate := exec.Command("podman", "system", "migrate")
		migrate.Env, migrate.Dir = p.env, u.HomeDir
		migrate.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		out, err := migrate.CombinedOutput()
		require.NoError(t, err, "podman system migrate: %s", out)
		p = startPodman(t, u)
		r = runIt()
	}
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, syscall.Stat(filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace", conv+".jsonl"), &st),
		"another cwd's folder is a view of the canonical one: %s", r.stderr)
	assert.Equal(t, uint32(uid), st.Uid)
}
