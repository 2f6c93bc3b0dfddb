package e2e

import (
	"bytes"
	"context"
	"debug/elf"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sessionfs/sessionfs/e2e/apistub"
)

// The images of contrib/docker, built as a user builds them (make agent-image; the steps of make csi-image),
// without a registry. The agent image is the user's own sessionfs-agent:latest: kept, and built again only when its
// inputs change (scripts/image-build's label), since npm installs take a while.

// repoRoot is the repository the tests run in (they run in e2e/).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	return root
}

// needImageBuild: what make agent-image and make csi-image run.
func needImageBuild(t *testing.T) *client.Client {
	t.Helper()
	cli := needDocker(t)
	for _, tool := range []string{"make", "go", "docker", "sha256sum"} {
		_, err := exec.LookPath(tool)
		need(t, err == nil, "building the contrib images: "+tool+" is not on PATH")
	}
	return cli
}

// buildCommand runs a build step in the repository, failing the test with its output.
func buildCommand(t *testing.T, timeout time.Duration, env []string, argv ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s: %s", strings.Join(argv, " "), out)
	return string(out)
}

// TestAgentImage: make agent-image builds sessionfs-agent:latest from npm on a base made of this machine's node,
// and `sessionfs run --backend docker --image sessionfs-agent ID -- claude -p` answers, its transcript filed in
// the session: as the image's own user (uid 1000, a session of that uid on a mount that lets it in, as a first
// user's laptop has it) and as root (--user 0, the session and mount root's).
func TestAgentImage(t *testing.T) {
	needImageBuild(t)
	out := buildCommand(t, 15*time.Minute, nil, "make", "--no-print-directory", "agent-image")
	t.Logf("make agent-image: %s", lastLines(out, 2))
	api := stub(t, "127.0.0.1:0")
	// The container shares the host's network namespace, so it reaches the stub on the loopback.
	claude := func(t *testing.T, store string, uid uint32, flags ...string) {
		t.Helper()
		args := append([]string{"--image", "sessionfs-agent", "--network", "host", "-e", "ANTHROPIC_BASE_URL=" + api.URL,
			"-e", "ANTHROPIC_API_KEY=sk-ant-test", "-e", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}, flags...)
		r := dockerRun(t, store, append(args, "s1", "--", "claude", "-p", "hi")...)
		require.Equal(t, 0, r.code, "%s %s", r.stdout, r.stderr)
		assert.Contains(t, r.stdout, apistub.Reply)
		canonical := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
		files := transcripts(t, canonical)
		require.Len(t, files, 1, "the conversation's transcript is filed in the session")
		b, err := os.ReadFile(files[0])
		require.NoError(t, err)
		assert.Contains(t, string(b), `"cwd":"/session/workspace"`)
		var st syscall.Stat_t
		require.NoError(t, syscall.Stat(files[0], &st))
		assert.Equal(t, uid, st.Uid, "the transcript is written by the container's user")
	}
	t.Run("image user", func(t *testing.T) {
		need(t, os.Geteuid() == 0, "root: to give the session to uid 1000")
		store := t.TempDir()
		ok(t, store, "new", "s1")
		require.NoError(t, chownTree(filepath.Join(store, "sessions", "s1"), 1000, 1000))
		mount(t, store, "--allow-other")
		claude(t, store, 1000)
	})
	t.Run("root", func(t *testing.T) {
		store := t.TempDir()
		ok(t, store, "new", "s1")
		mount(t, store)
		claude(t, store, 0, "--user", "0")
	})
}

// chownTree gives root and everything beneath it to uid:gid, links themselves rather than what they name.
func chownTree(root string, uid, gid int) error {
	return filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestCSIImage: the CSI plugin image (contrib/docker/csi, the steps of make csi-image) builds on a base made of
// this machine's fusermount3, prints csi's help by default, and serves the plugin: privileged, /dev/fuse, the store
// and the socket's folder bound, as node.yaml runs it, it mounts the store in the container and answers the
// identity call a kubelet makes first.
func TestCSIImage(t *testing.T) {
	cli := needImageBuild(t)
	needFUSE(t)
	need(t, os.Geteuid() == 0, "the CSI plugin mounts: root")
	ctxDir := t.TempDir()
	exe := filepath.Join(ctxDir, "sessionfs")
	if whole := backendsOf(bin); static(whole) { // the whole CLI, as make csi-image copies: csi is a backend command
		data, err := os.ReadFile(whole)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(exe, data, 0o755))
	} else { // the image has no C library of its own: the plugin must be static, as make build makes it
		buildCommand(t, 5*time.Minute, []string{"CGO_ENABLED=0"}, "go", "build", "-o", exe, "./cmd/sessionfs")
	}
	base := strings.TrimSpace(buildCommand(t, 5*time.Minute, nil, "go", "run", "./cmd/sessionfs-imagebase", "csi"))
	ref := "sessionfs-e2e-csi:" + runTag
	builtMu.Lock()
	built = append(built, ref) // removed when the test run ends
	builtMu.Unlock()
	buildCommand(t, 10*time.Minute, nil, "scripts/image-build", ref, base, "contrib/docker/csi/Dockerfile", ctxDir)

	logs, code := runContainer(t, cli, &container.Config{Image: ref}, &container.HostConfig{})
	require.Equal(t, 0, code, logs)
	assert.Contains(t, logs, "csi serves the Container Storage Interface")

	store, sock := t.TempDir(), t.TempDir()
	ok(t, store, "new", "s1")
	cfg := &container.Config{Image: ref, Cmd: []string{"csi", "--endpoint", "unix:///csi/csi.sock", "--node-id", "n1",
		"--store", "/mnt/sessionfs-store", "--mountpoint", "/var/lib/sessionfs/mnt"}}
	// node.yaml runs it privileged; this machine's runtime refuses that, and SYS_ADMIN with /dev/fuse is what
	// mounting takes.
	host := &container.HostConfig{CapAdd: []string{"SYS_ADMIN"}, Binds: []string{sock + ":/csi", store + ":/mnt/sessionfs-store"},
		Resources: container.Resources{Devices: []container.DeviceMapping{{PathOnHost: "/dev/fuse", PathInContainer: "/dev/fuse", CgroupPermissions: "rwm"}}}}
	id := startContainer(t, cli, cfg, host)
	eventually(t, 30*time.Second, func() bool {
		c, err := net.Dial("unix", filepath.Join(sock, "csi.sock"))
		if err == nil {
			c.Close()
		}
		return err == nil
	}, "the plugin in the image did not listen on its socket: %s", containerLogs(cli, id))
	conn, err := grpc.NewClient("unix://"+filepath.Join(sock, "csi.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	info, err := spec.NewIdentityClient(conn).GetPluginInfo(rpcCtx(t), &spec.GetPluginInfoRequest{})
	require.NoError(t, err, containerLogs(cli, id))
	assert.Equal(t, "sessionfs.dev", info.Name)
	// Probe answers once the plugin's mount of the store serves (fusermount3 and /dev/fuse at work in the image).
	_, err = spec.NewIdentityClient(conn).Probe(rpcCtx(t), &spec.ProbeRequest{})
	require.NoError(t, err, containerLogs(cli, id))
}

// static says whether the binary at p loads no shared library (no interpreter).
func static(p string) bool {
	f, err := elf.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

// startContainer creates and starts a container that cleanup removes.
func startContainer(t *testing.T, cli *client.Client, cfg *container.Config, host *container.HostConfig) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cli.ContainerCreate(ctx, cfg, host, nil, nil, "")
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		timeout := 10
		_ = cli.ContainerStop(ctx, c.ID, container.StopOptions{Timeout: &timeout}) // SIGTERM: the plugin unmounts
		_ = cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
	})
	require.NoError(t, cli.ContainerStart(ctx, c.ID, container.StartOptions{}))
	return c.ID
}

// runContainer runs a container to its end and returns its output and exit code.
func runContainer(t *testing.T, cli *client.Client, cfg *container.Config, host *container.HostConfig) (string, int) {
	t.Helper()
	id := startContainer(t, cli, cfg, host)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitCh, errCh := cli.ContainerWait(ctx, id, container.WaitConditionNotRunning)
	select {
	case w := <-waitCh:
		return containerLogs(cli, id), int(w.StatusCode)
	case err := <-errCh:
		require.NoError(t, err)
	}
	return "", -1
}

// containerLogs is what a container printed, stdout and stderr together.
func containerLogs(cli *client.Client, id string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := cli.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return "(no logs: " + err.Error() + ")"
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := stdcopy.StdCopy(&buf, &buf, rc); err != nil && err != io.EOF {
		return buf.String() + "(logs cut: " + err.Error() + ")"
	}
	return buf.String()
}

// TestContribManifestsNameBuiltImages: the Kubernetes manifests name the images make csi-image and make
// agent-image build (the Makefile's CSI_IMAGE and AGENT_IMAGE), and use a node's copy of them when it has one.
func TestContribManifestsNameBuiltImages(t *testing.T) {
	root := repoRoot(t)
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	makeVar := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `\s*\?=\s*(\S+)`).FindSubmatch(mk)
		require.NotNil(t, m, "the Makefile sets %s", name)
		return string(m[1])
	}
	want := map[string]string{"node.yaml": makeVar("CSI_IMAGE"), "controller.yaml": makeVar("CSI_IMAGE"),
		"example-pod.yaml": makeVar("AGENT_IMAGE")}
	for file, image := range want {
		b, err := os.ReadFile(filepath.Join(root, "contrib", "kubernetes", file))
		require.NoError(t, err)
		dec := yaml.NewDecoder(bytes.NewReader(b))
		found := 0
		for {
			var doc struct {
				Spec struct {
					Containers []manifestContainer
					Template   struct {
						Spec struct{ Containers []manifestContainer }
					}
				}
			}
			if err := dec.Decode(&doc); err == io.EOF {
				break
			} else {
				require.NoError(t, err, file)
			}
			for _, c := range append(doc.Spec.Containers, doc.Spec.Template.Spec.Containers...) {
				if c.Name != "sessionfs" && c.Name != "agent" {
					continue // the CSI sidecars come from registry.k8s.io
				}
				found++
				assert.Equal(t, image, c.Image, "%s: container %s", file, c.Name)
				assert.Equal(t, "IfNotPresent", c.ImagePullPolicy, "%s: container %s: a :latest image is pulled every time unless told", file, c.Name)
			}
		}
		assert.NotZero(t, found, "%s names no sessionfs or agent container", file)
	}
}

type manifestContainer struct {
	Name            string
	Image           string
	ImagePullPolicy string `yaml:"imagePullPolicy"`
}
