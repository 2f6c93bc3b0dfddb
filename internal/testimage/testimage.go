// Package testimage builds small container images from files of this machine, for the e2e tests and the
// benchmark: no registry is reachable here, so images are imported from a rootfs tarball through the Engine API.
package testimage

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"regexp"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

var libPath = regexp.MustCompile(`(/\S+\.so[.\d]*)`)

// SharedLibs lists what ldd says a binary loads.
func SharedLibs(bin string) ([]string, error) {
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

// Import makes a rootfs tarball (busybox with its applets as links, /etc/passwd, /tmp, extra files at their own
// paths) and imports it as ref through the Engine API.
func Import(cli *client.Client, ref string, extra []string) error {
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
