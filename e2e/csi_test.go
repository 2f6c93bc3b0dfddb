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
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// csiPlugin is a running `sessionfs csi` on its own store, socket and node mount.
type csiPlugin struct {
	store, mnt, sock string
	cmd              *exec.Cmd
	log              *syncBuffer
}

// startCSI starts the plugin as a node would (root, a real FUSE mount it makes itself) and waits for its socket.
// Cleanup stops it, which unmounts its mount; what it published is the test's to unpublish.
func startCSI(t *testing.T, store, node string, extra ...string) *csiPlugin {
	t.Helper()
	needFUSE(t)
	need(t, os.Geteuid() == 0, "the CSI plugin mounts: root")
	dir := t.TempDir()
	p := &csiPlugin{store: store, mnt: filepath.Join(dir, "mnt"), sock: filepath.Join(dir, "csi.sock"), log: &syncBuffer{}}
	p.cmd = exec.Command(bin, append([]string{"csi", "--endpoint", "unix://" + p.sock, "--node-id", node, "--mountpoint", p.mnt}, extra...)...)
	p.cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	require.NoError(t, p.cmd.Start())
	t.Cleanup(func() { p.stop(t) })
	eventually(t, 15*time.Second, func() bool {
		_, err := os.Stat(p.sock)
		return err == nil
	}, "the plugin's socket did not appear: %s", p.log)
	return p
}

func (p *csiPlugin) stop(t *testing.T) {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
	}
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

// TestCSISanity runs the upstream conformance suite (csi-sanity) against the real plugin: a real FUSE mount, real
// bind mounts at the target paths.
func TestCSISanity(t *testing.T) {
	p := startCSI(t, t.TempDir(), "node-a")
	cfg := sanity.NewTestConfig()
	cfg.Address = p.sock
	base := t.TempDir()
	cfg.TargetPath = filepath.Join(base, "target")
	cfg.StagingPath = filepath.Join(base, "staging")
	cfg.IdempotentCount = 2
	cfg.TestVolumeSize = 0
	sanity.Test(t, cfg)
	out, _ := exec.Command("grep", "-c", " "+base, "/proc/self/mountinfo").Output()
	require.Equal(t, "0", strings.TrimSpace(string(out)), "csi-sanity left mounts behind")
}
