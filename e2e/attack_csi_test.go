package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sessionfs/sessionfs/layout"
)

// TestCSIAttacks: hostile volume attributes, a session whose folders are links or FIFOs, a target that is a link.
// Each is a clear gRPC error at once, and nothing is mounted anywhere. (The sessions, made by `sessionfs new`,
// belong to no namespace: they are published as persistent volumes, whose handles Kubernetes authorizes.)
func TestCSIAttacks(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "evil")
	ok(t, store, "new", "fifo")
	ok(t, store, "new", "good")
	p := startCSI(t, store, "node-a")
	node, ctrl := p.client(t)
	host := t.TempDir() // a host folder a publish must never reach
	require.NoError(t, os.WriteFile(filepath.Join(host, "secret"), []byte("host"), 0o600))
	pods := p.kubelet
	target := filepath.Join(pods, "pod", "session")
	require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o750))
	nothingMounted := func(what string) {
		t.Helper()
		assert.Empty(t, mountsUnder(t, pods), "%s: nothing is mounted for pods", what)
		assertNothingMountedIn(t, p.mnt, host, filepath.Join(store, "sessions"))
	}

	for _, attrs := range []map[string]string{
		{"session": "../evil"}, {"session": "/etc"}, {"session": "evil/../../etc"}, {"session": ".."}, {"session": ""},
		{"session": "good", "profile": "/etc"}, {"session": "good", "profile": "../../etc"},
		{"session": "good", "path": "/"}, {"session": "good", "create": "perhaps"}, {"session": "good", "labels": "a=b,=c"},
	} {
		_, err := node.NodePublishVolume(rpcCtx(t), publishReq("csi-1", target, attrs))
		assert.Equal(t, codes.InvalidArgument, status.Code(err), "%v: %v", attrs, err)
		nothingMounted(fmt.Sprint(attrs))
	}
	_, err := ctrl.CreateVolume(rpcCtx(t), &spec.CreateVolumeRequest{Name: "../../etc", VolumeCapabilities: []*spec.VolumeCapability{publishReq("", "", nil).VolumeCapability}})
	assert.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)

	// The session's workspace made a link to a host folder, then a FIFO: refused, nothing mounted, no hang.
	ws := filepath.Join(store, "sessions", "evil", "workspace")
	require.NoError(t, os.RemoveAll(ws))
	require.NoError(t, os.Symlink(host, ws))
	_, err = node.NodePublishVolume(rpcCtx(t), pvReq("evil", target))
	assert.Equal(t, codes.FailedPrecondition, status.Code(err), "%v", err)
	assert.Contains(t, status.Convert(err).Message(), "workspace is not a folder of the session")
	nothingMounted("a workspace that is a link")
	fifo := filepath.Join(store, "sessions", "fifo", "workspace")
	require.NoError(t, os.RemoveAll(fifo))
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	_, err = node.NodePublishVolume(rpcCtx(t), pvReq("fifo", target))
	assert.Equal(t, codes.FailedPrecondition, status.Code(err), "%v", err)
	nothingMounted("a workspace that is a FIFO")

	// A target that is a link to a host folder: refused, the host folder untouched.
	linked := filepath.Join(pods, "pod", "linked")
	require.NoError(t, os.Symlink(host, linked))
	_, err = node.NodePublishVolume(rpcCtx(t), pvReq("good", linked))
	assert.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	nothingMounted("a target that is a link")

	// The refusals held no lease: the good session publishes, then unpublishes twice (idempotent).
	_, err = node.NodePublishVolume(rpcCtx(t), pvReq("good", target))
	require.NoError(t, err)
	assertBindsWithin(t, target, filepath.Join(store, "sessions", "good"))
	for range 2 {
		_, err = node.NodeUnpublishVolume(rpcCtx(t), &spec.NodeUnpublishVolumeRequest{VolumeId: "good", TargetPath: target})
		require.NoError(t, err)
	}
	nothingMounted("after unpublishing")
}

// assertBindsWithin checks every mount at or beneath target shows a folder inside sessionDir (or the mount's
// session folder).
func assertBindsWithin(t *testing.T, target, sessionDir string) {
	t.Helper()
	for _, e := range mountsUnder(t, filepath.Dir(target)) {
		if e.fstype == "fuse.sessionfs" {
			assert.Equal(t, "/sessions/"+filepath.Base(sessionDir), e.root, "%s", e.point)
			continue
		}
		assert.True(t, strings.HasPrefix(e.root, sessionDir+"/"), "%s shows %s, outside %s", e.point, e.root, sessionDir)
	}
}

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

// TestAttackCSIPublishSwap: a pod of the session (uid 65534, on the node's store) keeps exchanging its workspace
// with a symlink to a host folder while the plugin publishes and unpublishes the session again and again. Each
// publish either refuses the folder or binds the session's own workspace; nothing of the session ever shows at the
// host folder, and nothing is mounted there.
func TestAttackCSIPublishSwap(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1") // of no namespace: published as a persistent volume (csi/tenancy.go)
	p := startCSI(t, store, "node-a")
	node, _ := p.client(t)
	host := t.TempDir()
	require.NoError(t, os.Chmod(host, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(host, "host-file"), []byte("host\n"), 0o644))
	s1 := giveSession(t, store, "s1")
	openUp(t, s1)
	require.NoError(t, os.WriteFile(filepath.Join(s1, "workspace", "session-file"), []byte("session\n"), 0o644))
	require.NoError(t, os.Symlink(host, filepath.Join(s1, "ws-link")))
	require.NoError(t, os.Lchown(filepath.Join(s1, "ws-link"), 65534, 65534))
	startExchanger(t, filepath.Join(s1, "workspace"), filepath.Join(s1, "ws-link"))

	target := filepath.Join(p.kubelet, "pods", "pod", "volumes", "session")
	require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o750))
	t.Cleanup(func() { // a failure mid-loop leaves nothing published (before the plugin stops)
		_, _ = node.NodeUnpublishVolume(context.Background(), &spec.NodeUnpublishVolumeRequest{VolumeId: "s1", TargetPath: target})
	})
	const maxTries = 200
	deadline := time.Now().Add(2 * time.Minute)
	tries, published, refused, linked := 0, 0, 0, 0
	for tries < maxTries && time.Now().Before(deadline) {
		tries++
		_, err := node.NodePublishVolume(rpcCtx(t), pvReq("s1", target))
		if err != nil {
			refused++
			// The store's folder was the link when opened, or the mount's when the bind was to land on it, or the
			// mount's folder was invalidated under the bind (the kubelet retries).
			assert.Regexp(t, `session s1('s| on the mount|:) `, err.Error(), "a publish refused for another reason")
		} else {
			published++
			// As a pod sees it, but from the host, where a link must not be followed: the workspace is the session's
			// own folder, or (once the session swapped it, which detaches the bind with the name) its own link.
			names, err := namesBeneath(target, "workspace")
			if errors.Is(err, unix.ELOOP) {
				linked++
			} else {
				require.NoError(t, err)
				assert.NotContains(t, names, "host-file", "after %d publishes: the host folder is published as the workspace", tries)
			}
			_, err = node.NodeUnpublishVolume(rpcCtx(t), &spec.NodeUnpublishVolumeRequest{VolumeId: "s1", TargetPath: target})
			require.NoError(t, err)
		}
		require.Equal(t, "host-file", treeNames(t, host), "after %d publishes: the host folder holds only its own file", tries)
		assertNothingMountedIn(t, p.mnt, host, filepath.Dir(target))
	}
	t.Logf("%d publishes while the workspace was exchanged with a link to a host folder: %d published (%d showed the session's own link by the time it was read), %d refused a link", tries, published, linked, refused)
	assert.Positive(t, published)
	assert.Positive(t, refused)
}

// namesBeneath lists the folder rel beneath dir, reached with no symlink (ELOOP if rel is one).
func namesBeneath(dir, rel string) ([]string, error) {
	root, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	fd, err := layout.OpenBeneath(root, rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	return f.Readdirnames(-1)
}

// treeNames lists the names in dir, joined by spaces.
func treeNames(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}

// TestCSIAttackNamespaceForgedInSessionJSON: a pod of namespace a makes session squat inline, then, as the
// session's own files, rewrites its session.json to say namespace b and plants hooks in .claude/settings.json. A
// pod of b naming squat is PERMISSION_DENIED, and nothing of the session (the planted hooks the first) reaches its
// target: the owner is the store's record, which no session can write, never session.json. a keeps its session.
func TestCSIAttackNamespaceForgedInSessionJSON(t *testing.T) {
	store := t.TempDir()
	p := startCSI(t, store, "node-a")
	node, _ := p.client(t)
	unmountAllUnder(t, p.kubelet)
	pod := func(name string) string {
		target := filepath.Join(p.kubelet, "pods", name, "volumes", "session")
		require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o750))
		return target
	}
	inline := func(ns, target string) error {
		_, err := node.NodePublishVolume(rpcCtx(t), inNamespace(ns, publishReq0("csi-"+ns, target,
			map[string]string{"session": "squat", "create": "true"}), true))
		return err
	}
	unpublish := func(target string) {
		t.Helper()
		_, err := node.NodeUnpublishVolume(rpcCtx(t), unpublishReq("csi-x", target))
		require.NoError(t, err)
	}

	a1 := pod("a-1")
	require.NoError(t, inline("a", a1), "namespace a makes squat")
	// The pod, through its volume: session.json names b, and hooks wait in .claude/settings.json.
	meta := filepath.Join(a1, "session.json")
	b, err := os.ReadFile(meta)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	m["namespace"] = "b"
	b, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(meta, b, 0o644))
	const hooks = `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"echo planted-by-a"}]}]}}`
	require.NoError(t, os.WriteFile(filepath.Join(a1, ".claude", "settings.json"), []byte(hooks), 0o644))
	assert.Equal(t, "b", sessionNamespace(t, store, "squat"), "the forged session.json is in the store")
	unpublish(a1)

	b1 := pod("b-1")
	err = inline("b", b1)
	t.Logf("namespace b names squat, whose session.json says b: %v", err)
	assert.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	assert.Empty(t, mountsUnder(t, p.kubelet), "nothing published for b")
	_, err = os.Stat(filepath.Join(b1, ".claude", "settings.json"))
	assert.True(t, errors.Is(err, os.ErrNotExist), "a's planted hooks must not reach b's target: %v", err)
	if err == nil {
		unpublish(b1)
	}

	a2 := pod("a-2")
	require.NoError(t, inline("a", a2), "squat stays a's whatever its session.json says")
	unpublish(a2)
}
