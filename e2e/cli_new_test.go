package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShareCredentials: --share-credentials makes the session use the user's credentials file.
func TestShareCredentials(t *testing.T) {
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".claude"), 0o700))
	creds := filepath.Join(home, ".claude", ".credentials.json")
	require.NoError(t, os.WriteFile(creds, []byte(`{"token":"t"}`), 0o600))
	store := t.TempDir()
	r := cliIn(t, store, "", []string{"HOME=" + home}, "new", "s1", "--share-credentials")
	require.Equal(t, 0, r.code, r.stderr)
	target, err := os.Readlink(filepath.Join(store, "sessions", "s1", ".claude", ".credentials.json"))
	require.NoError(t, err)
	assert.Equal(t, creds, target)
	m := mount(t, store)
	b, err := os.ReadFile(filepath.Join(m.session("s1"), ".claude", ".credentials.json"))
	require.NoError(t, err)
	assert.Equal(t, `{"token":"t"}`, string(b))
}
