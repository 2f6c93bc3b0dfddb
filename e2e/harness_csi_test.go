package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// unmountAllUnder detaches, at the test's end, whatever is left mounted beneath dir (a failed run's).
func unmountAllUnder(t *testing.T, dir string) {
	t.Cleanup(func() {
		for _, e := range mountsUnder(t, dir) {
			_ = syscall.Unmount(e.point, syscall.MNT_DETACH)
		}
	})
}

func unpublishReq(volID, target string) *spec.NodeUnpublishVolumeRequest {
	return &spec.NodeUnpublishVolumeRequest{VolumeId: volID, TargetPath: target}
}

// sessionNamespace is the namespace session id's session.json records.
func sessionNamespace(t *testing.T, store, id string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(store, "sessions", id, "session.json"))
	require.NoError(t, err)
	var m struct {
		Namespace string `json:"namespace"`
	}
	require.NoError(t, json.Unmarshal(b, &m))
	return m.Namespace
}

// csiPlugin is a running `sessionfs csi` on its own store, socket, node mount, kubelet folder (the targets are
// beneath it) and state folder.
type csiPlugin struct {
	store, node, mnt, sock, kubelet, state string
	extra                                  []string
	cmd                                    *exec.Cmd
	done                                   chan struct{} // closed when the plugin has exited
	log                                    *syncBuffer
}

// startCSI starts the plugin as a node would (root, a real FUSE mount it makes itself) and waits for its socket.
// Cleanup stops it, which unmounts its mount; what it published is the test's to unpublish.
func startCSI(t *testing.T, store, node string, extra ...string) *csiPlugin {
	t.Helper()
	needFUSE(t)
	need(t, os.Geteuid() == 0, "the CSI plugin mounts: root")
	dir := t.TempDir()
	p := &csiPlugin{store: store, node: node, mnt: filepath.Join(dir, "mnt"), sock: filepath.Join(dir, "csi.sock"),
		kubelet: filepath.Join(dir, "kubelet"), state: filepath.Join(dir, "state"), extra: extra}
	require.NoError(t, os.Mkdir(p.kubelet, 0o750))
	p.start(t)
	return p
}

// restart is the plugin started again on the same folders, after it was killed (its node mount serves on).
func (p *csiPlugin) restart(t *testing.T) *csiPlugin {
	t.Helper()
	q := *p
	q.start(t)
	return &q
}

func (p *csiPlugin) start(t *testing.T) {
	t.Helper()
	p.done, p.log = make(chan struct{}), &syncBuffer{}
	p.cmd = exec.Command(bin, append([]string{"csi", "--endpoint", "unix://" + p.sock, "--node-id", p.node, "--mountpoint", p.mnt,
		"--kubelet-root", p.kubelet, "--state-dir", p.state}, p.extra...)...)
	p.cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+p.store)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	// The node's mount daemon the plugin starts shares its output and outlives a killed plugin (its pods keep
	// their sessions): Wait must not wait for that output to end.
	p.cmd.WaitDelay = 5 * time.Second
	require.NoError(t, p.cmd.Start())
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.stop(t) })
	// Listening, not only there: the socket's file exists from bind(2), a moment before listen(2), and a gRPC
	// client refused in that moment backs off for a second, failing every call meanwhile.
	eventually(t, 15*time.Second, func() bool {
		c, err := net.Dial("unix", p.sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, "the plugin did not listen on its socket: %s", p.log)
}

func (p *csiPlugin) stop(t *testing.T) {
	stopProcess(p.cmd, p.done, 15*time.Second)
	if isFUSEMount(p.mnt) || staleMount(p.mnt) {
		_ = syscall.Unmount(p.mnt, syscall.MNT_DETACH)
	}
}

// client dials the plugin as the kubelet does.
func (p *csiPlugin) client(t *testing.T) (spec.NodeClient, spec.ControllerClient) {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+p.sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return spec.NewNodeClient(conn), spec.NewControllerClient(conn)
}

// publishReq is a kubelet's NodePublishVolume of an inline volume with these attributes, for a pod of namespace
// "default" (podInfoOnMount: the kubelet's attributes win over the pod's).
func publishReq(volID, target string, attrs map[string]string) *spec.NodePublishVolumeRequest {
	return inNamespace("default", publishReq0(volID, target, attrs), true)
}

// pvReq is a kubelet's NodePublishVolume of the persistent volume whose handle is the session id.
func pvReq(id, target string) *spec.NodePublishVolumeRequest {
	return inNamespace("default", publishReq0(id, target, nil), false)
}

// inNamespace sets the pod information the kubelet gives (podInfoOnMount) over what the request holds.
func inNamespace(ns string, req *spec.NodePublishVolumeRequest, ephemeral bool) *spec.NodePublishVolumeRequest {
	req.VolumeContext["csi.storage.k8s.io/pod.namespace"] = ns
	req.VolumeContext["csi.storage.k8s.io/pod.name"] = "agent-0"
	req.VolumeContext["csi.storage.k8s.io/ephemeral"] = fmt.Sprint(ephemeral)
	return req
}

func publishReq0(volID, target string, attrs map[string]string) *spec.NodePublishVolumeRequest {
	ctx := map[string]string{}
	for k, v := range attrs {
		ctx[k] = v
	}
	return &spec.NodePublishVolumeRequest{VolumeId: volID, TargetPath: target, VolumeContext: ctx,
		VolumeCapability: &spec.VolumeCapability{AccessType: &spec.VolumeCapability_Mount{Mount: &spec.VolumeCapability_MountVolume{}},
			AccessMode: &spec.VolumeCapability_AccessMode{Mode: spec.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}}
}

// rpcCtx bounds a call: nothing the plugin does may hang.
func rpcCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
