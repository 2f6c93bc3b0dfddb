// Command sessionfs-imagebase imports the local base image of make agent-image or make csi-image from this
// machine's files, for a machine that reaches no registry (where one is reachable, the Dockerfiles' default BASE
// serves): `sessionfs-imagebase agent` holds this machine's node and npm, their shared libraries, busybox and
// the CA certificates; `sessionfs-imagebase csi` holds fusermount3 and busybox. It prints the image's name.
// An image already made from the same files (its label sessionfs.base.inputs) is kept, not imported again.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/docker/docker/client"

	"github.com/sessionfs/sessionfs/internal/testimage"
)

const inputsLabel = "sessionfs.base.inputs"

const caFile = "/etc/ssl/certs/ca-certificates.crt"

func main() {
	if len(os.Args) != 2 || (os.Args[1] != "agent" && os.Args[1] != "csi") {
		fmt.Fprintln(os.Stderr, "usage: sessionfs-imagebase agent|csi (imports the local base image and prints its name)")
		os.Exit(125)
	}
	ref, err := run(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "sessionfs-imagebase:", err)
		os.Exit(1)
	}
	fmt.Println(ref)
}

func run(kind string) (string, error) {
	var ref string
	var r testimage.Rootfs
	switch kind {
	case "agent":
		var err error
		if ref, r, err = agentBase(); err != nil {
			return "", err
		}
	case "csi":
		fuse, err := exec.LookPath("fusermount3")
		if err != nil {
			return "", fmt.Errorf("fusermount3 is not installed (apt-get install fuse3)")
		}
		libs, err := testimage.SharedLibs(fuse)
		if err != nil {
			return "", fmt.Errorf("ldd %s: %w", fuse, err)
		}
		ref, r = "sessionfs-csi-base:local", testimage.Rootfs{Files: append([]string{fuse}, libs...)}
	}
	if _, err := os.Stat("/bin/busybox"); err != nil {
		return "", fmt.Errorf("/bin/busybox is missing (apt-get install busybox-static)")
	}
	key, err := inputs(r)
	if err != nil {
		return "", err
	}
	r.Changes = append(r.Changes, "LABEL "+inputsLabel+"="+key)
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return "", err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if img, _, err := cli.ImageInspectWithRaw(ctx, ref); err == nil && img.Config != nil && img.Config.Labels[inputsLabel] == key {
		return ref, nil
	} else if err != nil && !client.IsErrNotFound(err) {
		return "", fmt.Errorf("cannot reach the Docker engine at %s (start dockerd, or point DOCKER_HOST at one): %v", cli.DaemonHost(), err)
	}
	if err := testimage.ImportRootfs(cli, ref, r); err != nil {
		return "", fmt.Errorf("import %s: %w", ref, err)
	}
	return ref, nil
}

// agentBase is node (the one on PATH), npm beside it, and the CA certificates: npm installs the CLIs in the
// Dockerfile's build, through whatever proxy this machine's CA file trusts.
func agentBase() (string, testimage.Rootfs, error) {
	nodeLink, err := exec.LookPath("node")
	if err != nil {
		return "", testimage.Rootfs{}, fmt.Errorf("node is not on PATH: install Node.js 20 or newer")
	}
	node, err := filepath.EvalSymlinks(nodeLink)
	if err != nil {
		return "", testimage.Rootfs{}, err
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return "", testimage.Rootfs{}, fmt.Errorf("%s --version: %w", node, err)
	}
	version := strings.TrimSpace(string(out))
	// npm lives in <prefix>/lib/node_modules/npm beside <prefix>/bin/node.
	prefix := filepath.Dir(filepath.Dir(node))
	npm := filepath.Join(prefix, "lib", "node_modules", "npm")
	if _, err := os.Stat(filepath.Join(npm, "bin", "npm-cli.js")); err != nil {
		return "", testimage.Rootfs{}, fmt.Errorf("npm is not at %s, beside %s: install npm with this node", npm, node)
	}
	libs, err := testimage.SharedLibs(node)
	if err != nil {
		return "", testimage.Rootfs{}, fmt.Errorf("ldd %s: %w", node, err)
	}
	files := append([]string{node}, libs...)
	// The agents' native binaries (claude, opencode) load more of the C library than node does.
	for _, name := range []string{"librt.so.1", "libresolv.so.2", "libutil.so.1", "libnss_files.so.2", "libnss_dns.so.2", "libz.so.1"} {
		for _, dir := range []string{"/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/lib64", "/lib"} {
			if p := filepath.Join(dir, name); fileExists(p) {
				files = append(files, p)
				break
			}
		}
	}
	changes := []string{"ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	if _, err := os.Stat(caFile); err == nil {
		files = append(files, caFile)
		changes = append(changes, "ENV NODE_EXTRA_CA_CERTS="+caFile, "ENV SSL_CERT_FILE="+caFile)
	}
	links := map[string]string{
		"/usr/local/bin/node": node,
		"/usr/local/bin/npm":  filepath.Join(npm, "bin", "npm-cli.js"),
		"/usr/local/bin/npx":  filepath.Join(npm, "bin", "npx-cli.js"),
		"/usr/bin/env":        "/bin/busybox", // npm's #!/usr/bin/env node
	}
	// What a Dockerfile's RUN and a user's shell in the container reach for.
	applets := []string{"grep", "sed", "chown", "chmod", "cp", "mv", "ln", "find", "xargs", "head", "tail", "tar",
		"gzip", "which", "dirname", "basename", "uname", "vi", "less", "ps", "kill", "date", "sort", "tr", "cut"}
	return "sessionfs-agent-base:node-" + version, testimage.Rootfs{Files: files, Trees: []string{npm}, Links: links,
		Applets: applets, Home: "/home/agent", Changes: changes}, nil
}

// inputs is a digest of what an image is made of: the description, and the files' and folders' contents.
func inputs(r testimage.Rootfs) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%#v\n", r) // Links is a map: %v prints it sorted
	paths := append(append([]string{"/bin/busybox"}, r.Files...), r.Trees...)
	slices.Sort(paths)
	for _, root := range paths {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%s %v\n", p, d.Type())
			if !d.Type().IsRegular() {
				return nil
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(h, f)
			return err
		})
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
