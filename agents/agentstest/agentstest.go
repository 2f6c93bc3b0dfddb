// Package agentstest holds the helpers the agents' tests share.
package agentstest

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/layout"
)

// OpenSession opens a new empty folder as a session's; root is its path.
func OpenSession(t *testing.T) (sess *layout.Dir, root string) {
	t.Helper()
	root = t.TempDir()
	d, err := layout.OpenDir(root)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d, root
}

// ReadJSON reads the JSON object in file p.
func ReadJSON(t *testing.T, p string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}
