package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/docker/docker/client"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/internal/testimage"
)

// An agent CLI npm installed (pi, Kimi Code, Copilot) runs in a container from its install folder, bound in
// read-only at the same path, under the Node.js binary it runs with on the host: the image is busybox with that
// binary's shared libraries, one image per binary.
var (
	nodeImagesMu sync.Mutex
	nodeImages   = map[string]string{}
)

// nodeInContainer is how a container runs the npm-installed CLI bin (a node_modules/.bin link) with the Node.js
// binary node: the image, the flags that bind the install folders in, and the command line before the CLI's own
// arguments.
func nodeInContainer(t *testing.T, cli *client.Client, bin, node string) (image string, flags, argv []string) {
	t.Helper()
	script, err := filepath.EvalSymlinks(bin)
	require.NoError(t, err)
	node, err = filepath.EvalSymlinks(node)
	require.NoError(t, err)
	nodeImagesMu.Lock()
	defer nodeImagesMu.Unlock()
	image, done := nodeImages[node]
	if !done {
		image = fmt.Sprintf("sessionfs-e2e-node%d:%s", len(nodeImages), runTag)
		libs, err := testimage.SharedLibs(node)
		require.NoError(t, err)
		require.NoError(t, importImage(cli, image, libs))
		nodeImages[node] = image
	}
	for _, dir := range installFolders(script, node) {
		flags = append(flags, "-v", dir+":"+dir+":ro")
	}
	return image, flags, []string{node, script}
}

// installFolders are the folders holding script and node: each one's npm prefix (the folder above node_modules),
// or the binary's own folder when it is not installed by npm (/usr/bin/node), once each.
func installFolders(paths ...string) []string {
	var out []string
	for _, p := range paths {
		dir := filepath.Dir(p)
		if i := strings.Index(p, string(os.PathSeparator)+"node_modules"+string(os.PathSeparator)); i >= 0 {
			dir = p[:i]
		}
		covered := false
		for _, d := range out {
			covered = covered || d == dir || strings.HasPrefix(dir, d+"/")
		}
		if !covered {
			out = append(out, dir)
		}
	}
	return out
}
