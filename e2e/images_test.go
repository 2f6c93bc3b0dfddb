package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/stretchr/testify/require"
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
	busyboxOnce.Do(func() { busyboxErr = importImage(cli, busyboxImage, nil) })
	require.NoError(t, busyboxErr)
	if claudeBinary == "" {
		return
	}
	claudeOnce.Do(func() {
		var libs []string
		if libs, claudeErr = sharedLibs(claudeBinary); claudeErr == nil {
			claudeErr = importImage(cli, claudeImage, libs)
		}
	})
	require.NoError(t, claudeErr)
}

var libPath = regexp.MustCompile(`(/\S+\.so[.\d]*)`)

// sharedLibs lists what ldd says a binary loads.
func sharedLibs(bin string) ([]string, error) {
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		return nil, err
	}
	var libs []string
	for _, m := range libPath.FindAllStringSubmatch(string(out), -1) {
		libs = append(libs, m[1])
	}
	return libs, nil
}

// importImage makes a rootfs tarball (busybox with its applets as links, /etc/passwd, /tmp, extra files at
// their own paths) and imports it as ref through the Engine API.
func importImage(cli *client.Client, ref string, extra []string) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data))}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	for _, d := range []string{"bin/", "etc/", "root/", "lib/", "lib/x86_64-linux-gnu/", "lib64/", "usr/", "usr/local/", "usr/local/bin/"} {
		if err := dir(d, 0o755); err != nil {
			return err
		}
	}
	if err := dir("tmp/", 0o1777); err != nil {
		return err
	}
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return err
	}
	if err := file("bin/busybox", 0o755, bb); err != nil {
		return err
	}
	for _, applet := range []string{"sh", "ls", "cat", "echo", "touch", "mkdir", "pwd", "id", "env", "sleep", "rm", "wc", "true", "false", "test", "readlink", "stat"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + applet, Linkname: "busybox"}); err != nil {
			return err
		}
	}
	if err := file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000:agent:/tmp:/bin/sh\n")); err != nil {
		return err
	}
	if err := file("etc/group", 0o644, []byte("root:x:0:\nagent:x:1000:\n")); err != nil {
		return err
	}
	for _, p := range extra {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := file(p[1:], 0o755, data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: &buf, SourceName: "-"}, ref, image.ImportOptions{})
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(io.Discard, rc)
	return err
}
