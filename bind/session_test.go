package bind

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// session makes a session's folder as the store and the mount hold it: RunDirs in both, a mark in each.
func session(t *testing.T) (mnt, store string) {
	t.Helper()
	mnt, store = t.TempDir(), t.TempDir()
	for _, rel := range RunDirs {
		require.NoError(t, os.MkdirAll(filepath.Join(mnt, "sessions", "s", rel), 0o755))
		require.NoError(t, os.MkdirAll(filepath.Join(store, rel), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "sessions", "s", "mount-mark"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(store, "workspace", "store-mark"), nil, 0o644))
	return mnt, store
}

func TestLaySession(t *testing.T) {
	needRoot(t)
	mnt, store := session(t)
	dst := t.TempDir()
	m, err := LaySession(openPath(t, mnt), openPath(t, store), "s", "", openPath(t, dst), ReadOnly)
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(dst, "mount-mark"), "the mount's folder of the session")
	assert.FileExists(t, filepath.Join(dst, "workspace", "store-mark"), "the store's workspace over it")
	assert.Contains(t, mountOptions(t, filepath.Join(dst, "workspace")), "ro")
	assert.Contains(t, mountOptions(t, filepath.Join(dst, "workspace")), "nosuid")
	require.NoError(t, m.Detach())
	assert.NoFileExists(t, filepath.Join(dst, "mount-mark"), "detached with the binds beneath it")
	assert.Empty(t, mountOptions(t, filepath.Join(dst, "workspace")))
}

// TestLaySessionRefusesLinks: a store folder the session swapped for a link, or a mount's folder answered as a
// link, lays nothing.
func TestLaySessionRefusesLinks(t *testing.T) {
	needRoot(t)
	host := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(host, "host-file"), nil, 0o644))

	mnt, store := session(t)
	require.NoError(t, os.RemoveAll(filepath.Join(store, "mcps")))
	require.NoError(t, os.Symlink(host, filepath.Join(store, "mcps")))
	dst := t.TempDir()
	_, err := LaySession(openPath(t, mnt), openPath(t, store), "s", "", openPath(t, dst), 0)
	require.ErrorIs(t, err, ErrNotFolder)
	assert.NoFileExists(t, filepath.Join(dst, "mount-mark"), "nothing laid")

	mnt, store = session(t)
	require.NoError(t, os.RemoveAll(filepath.Join(mnt, "sessions", "s")))
	require.NoError(t, os.Symlink(host, filepath.Join(mnt, "sessions", "s")))
	_, err = LaySession(openPath(t, mnt), openPath(t, store), "s", "", openPath(t, dst), 0)
	require.ErrorIs(t, err, ErrNotOnMount)
	assert.NoFileExists(t, filepath.Join(dst, "host-file"), "nothing laid")

	// A folder of the mount's session that is a link: the session is taken down again.
	mnt, store = session(t)
	ws := filepath.Join(mnt, "sessions", "s", "workspace")
	require.NoError(t, os.RemoveAll(ws))
	require.NoError(t, os.Symlink(host, ws))
	_, err = LaySession(openPath(t, mnt), openPath(t, store), "s", "", openPath(t, dst), 0)
	require.Error(t, err)
	assert.NoFileExists(t, filepath.Join(dst, "mount-mark"), "what was laid is detached")
	assert.NoFileExists(t, filepath.Join(host, "store-mark"), "nothing bound over the link's target")
}
