package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
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
