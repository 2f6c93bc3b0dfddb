// Package testimage builds small container images from files of this machine, for the e2e tests, the benchmark
// and the local base of the agent and CSI images (make agent-image, make csi-image): no registry is reachable
// here, so images are imported from a rootfs tarball through the Engine API.
package testimage

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
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
	return ImportRootfs(cli, ref, Rootfs{Files: extra})
}

// Rootfs is what an image holds beyond busybox, /etc/passwd (root, and agent as uid 1000), /etc/group and /tmp.
type Rootfs struct {
	Files   []string          // this machine's files, at their own paths, executable (links followed)
	Trees   []string          // this machine's folders, whole, at their own paths (links kept as links)
	Links   map[string]string // symbolic links to make: path -> target
	Applets []string          // busybox applets beyond the few every image has, as /bin/<applet>
	Home    string            // the agent user's home ("" is /tmp), made and owned by it
	Changes []string          // Dockerfile instructions applied by the import: ENV, LABEL, WORKDIR, USER
}

// ImportRootfs makes the rootfs r describes and imports it as ref through the Engine API.
func ImportRootfs(cli *client.Client, ref string, r Rootfs) error {
	var buf bytes.Buffer
	if err := r.write(tar.NewWriter(&buf)); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: &buf, SourceName: "-"}, ref, image.ImportOptions{Changes: r.Changes})
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(io.Discard, rc)
	return err
}
