package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/internal/testimage"
)

// Test images are built here from files of this machine (no registry is reachable): a busybox rootfs, and one
// that also holds the shared libraries the claude binary needs, which the tests bind in read-only. Each test run
// tags its own (test runs in parallel never share one) and removes them when it ends (removeImages).
var (
	runTag       = fmt.Sprintf("run-%d-%d", os.Getpid(), time.Now().UnixNano()%1_000_000)
	busyboxImage = "sessionfs-e2e-busybox:" + runTag
	claudeImage  = "sessionfs-e2e-claude:" + runTag
)

var (
	busyboxOnce, claudeOnce sync.Once
	busyboxErr, claudeErr   error
	builtMu                 sync.Mutex
	built                   []string // images this run imported
)

// removeImages removes the images this test run built, once its tests are done.
func removeImages() error {
	builtMu.Lock()
	defer builtMu.Unlock()
	if len(built) == 0 {
		return nil
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer cli.Close()
	var errs []error
	for _, ref := range built {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := cli.ImageRemove(ctx, ref, image.RemoveOptions{Force: true, PruneChildren: true})
		cancel()
		if err != nil && !client.IsErrNotFound(err) {
			errs = append(errs, fmt.Errorf("remove test image %s: %w", ref, err))
		}
	}
	built = nil
	return errors.Join(errs...)
}

// importImage builds ref and notes it for removeImages.
func importImage(cli *client.Client, ref string, extra []string) error {
	builtMu.Lock()
	built = append(built, ref) // noted first: a half-made import is removed too
	builtMu.Unlock()
	return testimage.Import(cli, ref, extra)
}

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
	busyboxOnce.Do(func() { busyboxErr = importImage(cli, busyboxImage, nil) })
	require.NoError(t, busyboxErr)
	if claudeBinary == "" {
		return
	}
	claudeOnce.Do(func() {
		var libs []string
		if libs, claudeErr = testimage.SharedLibs(claudeBinary); claudeErr == nil {
			claudeErr = importImage(cli, claudeImage, libs)
		}
	})
	require.NoError(t, claudeErr)
}

// inContainer runs a shell script in a busybox container of session id.
func inContainer(t *testing.T, store, id, script string, flags ...string) result {
	t.Helper()
	args := append([]string{"--image", busyboxImage}, flags...)
	return dockerRun(t, store, append(args, id, "--", "sh", "-c", script)...)
}

func dockerContainment(t *testing.T) {
	t.Helper()
	images(t, needDocker(t), "")
}

// dockerRun runs `sessionfs run --backend docker` with the given flags, ID and command.
func dockerRun(t *testing.T, store string, args ...string) result {
	t.Helper()
	return cli(t, store, append([]string{"run", "--backend", "docker"}, args...)...)
}
