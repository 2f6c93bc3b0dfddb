package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// csiPublish times the CSI plugin's NodePublishVolume and NodeUnpublishVolume of one session, as the kubelet
// calls them for a pod's start and end: the plugin on its own socket, store and node mount (median of 20).
func (b *bench) csiPublish() {
	dir, err := os.MkdirTemp(b.c.dir, "csi-")
	if err != nil {
		b.skip("CSI: %v", err)
		return
	}
	defer os.RemoveAll(dir)
	sock, mnt, store := filepath.Join(dir, "csi.sock"), filepath.Join(dir, "mnt"), filepath.Join(dir, "store")
	// The pod's target is beneath dir, which stands for the kubelet's folder (the plugin publishes nowhere else).
	cmd := exec.Command(b.c.sessionfs, "--store", store, "csi", "--endpoint", "unix://"+sock, "--node-id", "bench", "--mountpoint", mnt,
		"--kubelet-root", dir, "--state-dir", filepath.Join(dir, "state"))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.skip("CSI: %v", err)
		return
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
	}()
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		if c, err := net.Dial("unix", sock); err == nil { // listening, not only bound
			c.Close()
			break
		}
		if time.Since(start) > 15*time.Second {
			b.skip("CSI: the plugin did not listen on its socket")
			return
		}
	}
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.skip("CSI: %v", err)
		return
	}
	defer conn.Close()
	node := spec.NewNodeClient(conn)
	ctx := context.Background()
	target := filepath.Join(dir, "pod", "session")
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		b.skip("CSI: %v", err)
		return
	}
	req := &spec.NodePublishVolumeRequest{VolumeId: "csi-bench", TargetPath: target,
		VolumeContext: map[string]string{"session": "bench", "csi.storage.k8s.io/ephemeral": "true", "csi.storage.k8s.io/pod.namespace": "bench"},
		VolumeCapability: &spec.VolumeCapability{AccessType: &spec.VolumeCapability_Mount{Mount: &spec.VolumeCapability_MountVolume{}},
			AccessMode: &spec.VolumeCapability_AccessMode{Mode: spec.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}}
	var pub, unpub []time.Duration
	for i := 0; i < 21; i++ {
		t0 := time.Now()
		if _, err := node.NodePublishVolume(ctx, req); err != nil {
			b.skip("CSI publish: %v", err)
			return
		}
		t1 := time.Now()
		if _, err := node.NodeUnpublishVolume(ctx, &spec.NodeUnpublishVolumeRequest{VolumeId: req.VolumeId, TargetPath: target}); err != nil {
			b.skip("CSI unpublish: %v", err)
			return
		}
		if i > 0 { // the first publish makes the session
			pub, unpub = append(pub, t1.Sub(t0)), append(unpub, time.Since(t1))
		}
	}
	b.Figures = append(b.Figures,
		figure{Name: fmt.Sprintf("CSI NodePublishVolume of a session (median of %d)", len(pub)), Value: ms(median(pub)), Unit: "ms"},
		figure{Name: fmt.Sprintf("CSI NodeUnpublishVolume (median of %d)", len(unpub)), Value: ms(median(unpub)), Unit: "ms"})
}
