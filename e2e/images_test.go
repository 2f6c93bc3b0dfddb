package e2e

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/e2e/testimage"
)

// Test images are built here from files of this machine (no registry is reachable): a busybox rootfs, and one
// that also holds the shared libraries the claude binary needs, which the tests bind in read-only.
const (
	busyboxImage = "sessionfs-e2e-busybox:latest"
	claudeImage  = "sessionfs-e2e-claude:latest"
)

var (
	busyboxOnce, claudeOnce sync.Once
	busyboxErr, claudeErr   error
)

func needDocker(t *testing.T) *client.Client {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, perr := cli.Ping(ctx)
	need(t, perr == nil, "Docker: no engine answers (start dockerd; .ci/run does)")
	_, berr := os.Stat("/bin/busybox")
	need(t, berr == nil, "Docker: /bin/busybox is missing for the test image (apt-get install busybox-static)")
	t.Cleanup(func() { cli.Close() })
	return cli
}

// images builds the busybox image, and the claude image when claudeBinary is given, once per test run.
func images(t *testing.T, cli *client.Client, claudeBinary string) {
	t.Helper()
	busyboxOnce.Do(func() { busyboxErr = testimage.Import(cli, busyboxImage, nil) })
	require.NoError(t, busyboxErr)
	if claudeBinary == "" {
		return
	}
	claudeOnce.Do(func() {
		var libs []string
		if libs, claudeErr = testimage.SharedLibs(claudeBinary); claudeErr == nil {
			claudeErr = testimage.Import(cli, claudeImage, libs)
		}
	})
	require.NoError(t, claudeErr)
}
