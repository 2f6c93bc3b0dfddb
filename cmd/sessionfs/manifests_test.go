//go:build !nobackends

package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/sessionfs/sessionfs/csi"
)

// The Kubernetes manifests parse, name this driver, and start the plugin only with flags `sessionfs csi` takes.
func TestKubernetesManifests(t *testing.T) {
	files, err := filepath.Glob("../../contrib/kubernetes/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	csiCmd, _, err := newRootCmd().Find([]string{"csi"})
	require.NoError(t, err)
	assert.Contains(t, csiCmd.Short, "(driver "+csi.Name+")", "the help both builds give names this driver")
	kinds := map[string]int{}
	plugins := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else {
				require.NoError(t, err, f)
			}
			kind, _ := doc["kind"].(string)
			require.NotEmpty(t, kind, "%s: a document without a kind", f)
			kinds[kind]++
			switch kind {
			case "CSIDriver":
				assert.Equal(t, csi.Name, dig(doc, "metadata", "name"), f)
			case "StorageClass":
				assert.Equal(t, csi.Name, doc["provisioner"], f)
			case "Pod":
				for _, v := range dig(doc, "spec", "volumes").([]any) {
					if d := dig(v, "csi", "driver"); d != nil {
						assert.Equal(t, csi.Name, d, f)
					}
				}
			case "DaemonSet", "Deployment":
				for _, c := range dig(doc, "spec", "template", "spec", "containers").([]any) {
					if dig(c, "name") != "sessionfs" {
						continue
					}
					plugins++
					args := dig(c, "args").([]any)
					require.Equal(t, "csi", args[0], "%s: the plugin runs `sessionfs csi`", f)
					for _, a := range args[1:] {
						name, _, _ := strings.Cut(strings.TrimPrefix(a.(string), "--"), "=")
						assert.NotNil(t, csiCmd.Flag(name), "%s: sessionfs csi takes no --%s", f, name)
					}
					assert.Equal(t, true, dig(c, "securityContext", "privileged"), "%s: the plugin mounts", f)
				}
			}
		}
	}
	assert.Equal(t, 2, plugins, "the node plugin and the controller")
	for _, k := range []string{"CSIDriver", "DaemonSet", "Deployment", "StorageClass", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"} {
		assert.Positive(t, kinds[k], "a %s", k)
	}
}

// dig walks nested maps by key.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
