package e2e

import (
	"os"
	"path/filepath"
	"testing"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// stillMounted asserts the host mount at dir is there, its file with it.
func stillMounted(t *testing.T, dir, what string) {
	t.Helper()
	found := false
	for _, e := range mountsUnder(t, filepath.Dir(dir)) {
		found = found || (e.point == dir && e.fstype == "tmpfs")
	}
	assert.True(t, found, "%s: the host's mount at %s was unmounted", what, dir)
	assert.FileExists(t, filepath.Join(dir, "host-file"), what)
}

// TestCSIAttackUnpublishForeignMounts: NodeUnpublishVolume given a target that holds the host's mounts (a tmpfs
// beneath it, on it, or a target outside the kubelet's folder) unmounts nothing: only what the plugin published
// is its to unpublish.
func TestCSIAttackUnpublishForeignMounts(t *testing.T) {
	p := startCSI(t, t.TempDir(), "node-a")
	node, _ := p.client(t)
	unmountAllUnder(t, p.kubelet)

	// A folder beneath the kubelet's holding a host mount, then the host mount itself, given as targets.
	vol := filepath.Join(p.kubelet, "pods", "uid-1", "volumes", "kubernetes.io~csi", "session", "mount")
	host := filepath.Join(vol, "host")
	hostMount(t, host)
	_, err := node.NodeUnpublishVolume(rpcCtx(t), unpublishReq("csi-1", vol))
	t.Logf("unpublish of a folder holding a host mount: %v", err)
	stillMounted(t, host, "a folder holding it")
	_, err = node.NodeUnpublishVolume(rpcCtx(t), unpublishReq("csi-1", host))
	t.Logf("unpublish of the host mount itself: %v", err)
	assert.Equal(t, codes.FailedPrecondition, status.Code(err), "%v", err)
	stillMounted(t, host, "the mount itself")

	// A target outside the kubelet's folder (as "/" would be).
	outside := t.TempDir()
	hostMount(t, filepath.Join(outside, "host"))
	_, err = node.NodeUnpublishVolume(rpcCtx(t), unpublishReq("csi-1", outside))
	t.Logf("unpublish of a folder outside the kubelet's: %v", err)
	assert.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	stillMounted(t, filepath.Join(outside, "host"), "outside the kubelet's folder")

	// What the plugin published, it unpublishes, leaving the host mount beside it.
	target := filepath.Join(filepath.Dir(vol), "mount2")
	_, err = node.NodePublishVolume(rpcCtx(t), publishReq("csi-2", target, map[string]string{"session": "s"}))
	require.NoError(t, err)
	_, err = node.NodeUnpublishVolume(rpcCtx(t), unpublishReq("csi-2", target))
	require.NoError(t, err)
	assert.NoDirExists(t, target)
	assert.Empty(t, mountsUnder(t, target))
	stillMounted(t, host, "after unpublishing a volume beside it")
}

// TestCSIAttackInlineTenancy: a pod's inline volume names sessions of its own namespace only. A pod of namespace
// b naming a's session, or a session made outside Kubernetes, is PERMISSION_DENIED before the lease (a's pods
// still start); what b makes is b's. A persistent volume's handle (bound by Kubernetes) is trusted.
func TestCSIAttackInlineTenancy(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "host-made")
	p := startCSI(t, store, "node-a")
	node, _ := p.client(t)
	unmountAllUnder(t, p.kubelet)
	pod := func(name string) string { // the kubelet makes the target's folder
		target := filepath.Join(p.kubelet, "pods", name, "volumes", "session")
		require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o750))
		return target
	}
	inline := func(ns, pod, session string) error {
		_, err := node.NodePublishVolume(rpcCtx(t), inNamespace(ns, publishReq0("csi-"+filepath.Base(filepath.Dir(filepath.Dir(pod))), pod,
			map[string]string{"session": session}), true))
		return err
	}
	unpublish := func(target string) {
		t.Helper()
		_, err := node.NodeUnpublishVolume(rpcCtx(t), unpublishReq("csi-x", target))
		require.NoError(t, err)
	}

	require.NoError(t, inline("a", pod("a-1"), "sa"), "namespace a makes its session")
	assert.Equal(t, "a", sessionNamespace(t, store, "sa"))
	unpublish(pod("a-1"))

	err := inline("b", pod("b-1"), "sa")
	t.Logf("namespace b names a's session: %v", err)
	assert.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	assert.Empty(t, mountsUnder(t, p.kubelet), "nothing published for b")
	require.NoError(t, inline("a", pod("a-2"), "sa"), "b's refused pod holds no lease: a's pod starts")
	unpublish(pod("a-2"))

	require.NoError(t, inline("b", pod("b-2"), "sb"), "namespace b makes its own session")
	assert.Equal(t, "b", sessionNamespace(t, store, "sb"), "made into b, the pod's namespace")
	unpublish(pod("b-2"))
	err = inline("a", pod("a-3"), "sb")
	t.Logf("namespace a names b's session: %v", err)
	assert.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	err = inline("a", pod("a-4"), "host-made")
	t.Logf("an inline volume names a session of no namespace: %v", err)
	assert.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	assert.Empty(t, mountsUnder(t, p.kubelet), "nothing published for the refused pods")

	// An inline volume the kubelet did not mark (no podInfoOnMount): its namespace is unknown, refused; a request
	// not marked inline that names another session than its handle is a pod's own attributes, refused.
	req := publishReq0("csi-u", pod("u-1"), map[string]string{"session": "sa", "csi.storage.k8s.io/ephemeral": "true"})
	_, err = node.NodePublishVolume(rpcCtx(t), req)
	assert.Equal(t, codes.FailedPrecondition, status.Code(err), "%v", err)
	_, err = node.NodePublishVolume(rpcCtx(t), publishReq0("csi-u", pod("u-2"), map[string]string{"session": "sa"}))
	assert.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	assert.Empty(t, mountsUnder(t, p.kubelet), "nothing published for unmarked inline volumes")

	// A persistent volume of a's session, bound to a claim of b: Kubernetes authorized it.
	_, err = node.NodePublishVolume(rpcCtx(t), inNamespace("b", publishReq0("sa", pod("b-3"), nil), false))
	require.NoError(t, err)
	unpublish(pod("b-3"))
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
