package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sessionfs/sessionfs/bind"
	"github.com/sessionfs/sessionfs/e2e/apistub"
)

// TestCSISanity runs the upstream conformance suite (csi-sanity) against the real plugin: a real FUSE mount, real
// bind mounts at the target paths.
func TestCSISanity(t *testing.T) {
	p := startCSI(t, t.TempDir(), "node-a")
	cfg := sanity.NewTestConfig()
	cfg.Address = p.sock
	base := p.kubelet
	cfg.TargetPath = filepath.Join(base, "target")
	cfg.StagingPath = filepath.Join(base, "staging")
	cfg.IdempotentCount = 2
	cfg.TestVolumeSize = 1 << 20        // a size, so the suite checks a second CreateVolume of another size is refused
	t.Setenv("GINKGO_NO_COLOR", "TRUE") // plain lines in CI's log
	sanity.Test(t, cfg)
	out, _ := exec.Command("grep", "-c", " "+base, "/proc/self/mountinfo").Output()
	require.Equal(t, "0", strings.TrimSpace(string(out)), "csi-sanity left mounts behind")
}

// TestCSIPodResumesFromAnotherCwd drives the plugin as the kubelet would: session s is published for a "pod", a
// real container gets the target at /session and runs the real claude CLI against the API stub; unpublished, then
// published again for a second pod that works from another cwd: the conversation resumes, one transcript.
func TestCSIPodResumesFromAnotherCwd(t *testing.T) {
	claude := claudeBin(t)
	cli := needDocker(t)
	real, err := filepath.EvalSymlinks(claude)
	require.NoError(t, err)
	images(t, cli, real)
	store := t.TempDir()
	p := startCSI(t, store, "node-a")
	node, _ := p.client(t)
	api := stub(t, "127.0.0.1:0")
	pods := p.kubelet
	canonical := filepath.Join(store, "sessions", "s", ".claude", "projects", "-session-workspace")

	pod := func(name, workdir string, args ...string) string {
		target := filepath.Join(pods, name, "volumes", "session")
		require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o750))
		_, err := node.NodePublishVolume(rpcCtx(t), publishReq("csi-"+name, target, map[string]string{"session": "s"}))
		require.NoError(t, err)
		defer func() {
			_, err := node.NodeUnpublishVolume(rpcCtx(t), &spec.NodeUnpublishVolumeRequest{VolumeId: "csi-" + name, TargetPath: target})
			require.NoError(t, err)
			assert.NoDirExists(t, target)
			assert.Empty(t, mountsUnder(t, filepath.Dir(target)), "unpublish leaves nothing mounted")
		}()
		// The heavy folders are the store's own at native speed (bind.RunDirs), the rest the mount's.
		assert.Len(t, mountsUnder(t, filepath.Dir(target)), 1+len(bind.RunDirs), "the session, and its heavy folders bound natively")
		out, err := exec.Command("docker", append([]string{"run", "--rm", "--network", "host", "-v", target + ":/session",
			"-v", real + ":/usr/local/bin/claude:ro", "-w", workdir, "-e", "HOME=/tmp", "-e", "CLAUDE_CONFIG_DIR=/session/.claude",
			"-e", "ANTHROPIC_BASE_URL=" + api.URL, "-e", "ANTHROPIC_API_KEY=sk-ant-test", "-e", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			claudeImage, "/usr/local/bin/claude", "-p"}, args...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	out := pod("pod-1", "/session/workspace", "hello from the first pod")
	assert.Contains(t, out, apistub.Reply)
	files := transcripts(t, canonical)
	require.Len(t, files, 1)
	n := lineCount(t, files[0])
	require.NoError(t, os.MkdirAll(filepath.Join(store, "sessions", "s", "workspace", "api"), 0o755))

	out = pod("pod-2", "/session/workspace/api", "--continue", "again, from a subfolder")
	assert.NotContains(t, out, "No conversation found")
	assert.Equal(t, files, transcripts(t, canonical), "one transcript")
	assert.Greater(t, lineCount(t, files[0]), n, "the second pod continued the first pod's conversation")
}

// TestCSIOnePodPerSessionAcrossHosts: two nodes (two MooseFS clients of one store, each with its plugin). A
// session published on node A is refused on node B, naming A; B gets it once A unpublishes, and once A's plugin
// dies.
func TestCSIOnePodPerSessionAcrossHosts(t *testing.T) {
	cluster := startMooseFS(t)
	hostA, hostB := cluster.mount(t, "host-a"), cluster.mount(t, "host-b")
	storeA, storeB := filepath.Join(hostA.mnt, "store"), filepath.Join(hostB.mnt, "store")
	ok(t, storeA, "new", "web")
	a, b := startCSI(t, storeA, "node-a"), startCSI(t, storeB, "node-b")
	nodeA, _ := a.client(t)
	nodeB, _ := b.client(t)
	t.Cleanup(func() {
		for _, pods := range []string{a.kubelet, b.kubelet} {
			for _, e := range mountsUnder(t, pods) {
				_ = syscall.Unmount(e.point, syscall.MNT_DETACH)
			}
		}
	})
	targetA, targetB := filepath.Join(a.kubelet, "a"), filepath.Join(b.kubelet, "b")
	unpublish := func(n spec.NodeClient, target string) {
		t.Helper()
		_, err := n.NodeUnpublishVolume(rpcCtx(t), &spec.NodeUnpublishVolumeRequest{VolumeId: "web", TargetPath: target})
		require.NoError(t, err)
	}

	_, err := nodeA.NodePublishVolume(rpcCtx(t), pvReq("web", targetA))
	require.NoError(t, err)
	_, err = nodeB.NodePublishVolume(rpcCtx(t), pvReq("web", targetB))
	require.Equal(t, codes.FailedPrecondition, status.Code(err), "%v", err)
	assert.Contains(t, status.Convert(err).Message(), "session web is running on host node-a")
	assert.Empty(t, mountsUnder(t, targetB), "nothing published on B")
	assert.NoFileExists(t, filepath.Join(targetB, "workspace"))

	unpublish(nodeA, targetA)
	_, err = nodeB.NodePublishVolume(rpcCtx(t), pvReq("web", targetB))
	require.NoError(t, err, "A unpublished: B gets the session")
	unpublish(nodeB, targetB)

	// A's plugin dies while it holds the session: its lease dies with it.
	_, err = nodeA.NodePublishVolume(rpcCtx(t), pvReq("web", targetA))
	require.NoError(t, err)
	require.NoError(t, a.cmd.Process.Kill())
	<-a.done
	eventually(t, 30*time.Second, func() bool {
		_, err = nodeB.NodePublishVolume(rpcCtx(t), pvReq("web", targetB))
		return err == nil
	}, "B never got the session of A's dead plugin: %v", err)
	unpublish(nodeB, targetB)
}

// TestCSIRepublishAfterRestart: a plugin killed and started again answers the kubelet's repeated publish of a
// target it published as done (its record on disk), holds the session's lease again, and unpublishes it; with its
// record lost too, the mount table tells its mounts (clones of the node's mount).
func TestCSIRepublishAfterRestart(t *testing.T) {
	p := startCSI(t, t.TempDir(), "node-a")
	unmountAllUnder(t, p.kubelet)
	target, other := filepath.Join(p.kubelet, "pod-1", "session"), filepath.Join(p.kubelet, "pod-2", "session")
	for _, dir := range []string{target, other} {
		require.NoError(t, os.MkdirAll(filepath.Dir(dir), 0o750))
	}
	req := publishReq("csi-1", target, map[string]string{"session": "s"})
	node, _ := p.client(t)
	_, err := node.NodePublishVolume(rpcCtx(t), req)
	require.NoError(t, err)

	for i, forget := range []bool{false, true} {
		require.NoError(t, p.cmd.Process.Kill())
		<-p.done
		if forget {
			require.NoError(t, os.RemoveAll(p.state))
		}
		p = p.restart(t)
		node, _ = p.client(t)
		_, err = node.NodePublishVolume(rpcCtx(t), req)
		t.Logf("restart %d (state folder removed: %t): repeated publish: %v", i+1, forget, err)
		require.NoError(t, err, "a repeated publish of a published target is done already")
		_, err = node.NodePublishVolume(rpcCtx(t), publishReq("csi-2", other, map[string]string{"session": "s"}))
		assert.Equal(t, codes.FailedPrecondition, status.Code(err), "the restarted plugin holds the session's lease again: %v", err)
		ro := publishReq("csi-1", target, map[string]string{"session": "s"})
		ro.Readonly = true
		_, err = node.NodePublishVolume(rpcCtx(t), ro)
		assert.Equal(t, codes.AlreadyExists, status.Code(err), "the same target read-only is another publish: %v", err)
	}
	_, err = node.NodeUnpublishVolume(rpcCtx(t), unpublishReq("csi-1", target))
	require.NoError(t, err)
	assert.NoDirExists(t, target)
	assert.Empty(t, mountsUnder(t, p.kubelet), "unpublished after the restarts")
	_, err = node.NodePublishVolume(rpcCtx(t), publishReq("csi-2", other, map[string]string{"session": "s"}))
	require.NoError(t, err, "the lease was given back")
	_, err = node.NodeUnpublishVolume(rpcCtx(t), unpublishReq("csi-2", other))
	require.NoError(t, err)
}

// TestCSICreateVolumeOtherCapacity: a second CreateVolume of a name with another capacity is ALREADY_EXISTS, as
// the CSI spec requires; the same request again is the volume; a claim's namespace owns what it makes.
func TestCSICreateVolumeOtherCapacity(t *testing.T) {
	store := t.TempDir()
	p := startCSI(t, store, "node-a")
	_, ctrl := p.client(t)
	create := func(size int64) (*spec.CreateVolumeResponse, error) {
		return ctrl.CreateVolume(rpcCtx(t), &spec.CreateVolumeRequest{Name: "pvc-1", CapacityRange: &spec.CapacityRange{RequiredBytes: size, LimitBytes: size},
			Parameters:         map[string]string{"csi.storage.k8s.io/pvc/namespace": "a", "csi.storage.k8s.io/pvc/name": "claim"},
			VolumeCapabilities: []*spec.VolumeCapability{publishReq0("", "", nil).VolumeCapability}})
	}
	rsp, err := create(1 << 20)
	require.NoError(t, err)
	assert.Equal(t, int64(1<<20), rsp.GetVolume().GetCapacityBytes())
	assert.Equal(t, "a", sessionNamespace(t, store, "pvc-1"), "the claim's namespace owns the session")
	_, err = create(1 << 20)
	require.NoError(t, err, "the same request again")
	_, err = create(2 << 20)
	t.Logf("the same name with twice the capacity: %v", err)
	assert.Equal(t, codes.AlreadyExists, status.Code(err), "%v", err)
}
