package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
	const maxTries = 200
	deadline := time.Now().Add(2 * time.Minute)
	tries, published, refused := 0, 0, 0
	for tries < maxTries && time.Now().Before(deadline) {
		tries++
		_, err := node.NodePublishVolume(rpcCtx(t), pvReq("s1", target))
		if err != nil {
			refused++
			assert.Contains(t, err.Error(), "not a folder of the session", "a publish refused for another reason")
		} else {
			published++
			ents, err := os.ReadDir(filepath.Join(target, "workspace"))
			require.NoError(t, err)
			for _, e := range ents {
				assert.NotEqual(t, "host-file", e.Name(), "after %d publishes: the host folder is published as the workspace", tries)
			}
			_, err = node.NodeUnpublishVolume(rpcCtx(t), &spec.NodeUnpublishVolumeRequest{VolumeId: "s1", TargetPath: target})
			require.NoError(t, err)
		}
		require.Equal(t, "host-file", treeNames(t, host), "after %d publishes: the host folder holds only its own file", tries)
		assertNothingMountedIn(t, p.mnt, host, filepath.Dir(target))
	}
	t.Logf("%d publishes while the workspace was exchanged with a link to a host folder: %d published the session's own workspace, %d refused a link", tries, published, refused)
	assert.Positive(t, published)
	assert.Positive(t, refused)
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
