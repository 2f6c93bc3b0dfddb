package confine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestReadableByAll(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.Chmod(root, 0o755))
	write := func(rel string, mode os.FileMode) {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(rel), mode))
		require.NoError(t, os.Chmod(p, mode))
	}
	write("hosts", 0o644)
	write("shadow", 0o640)           // group-readable only: a secret
	write("ssl/certs/ca.pem", 0o644) // a folder readable whole
	write("ssl/openssl.cnf", 0o644)
	write("ssl/private/key.pem", 0o600)
	require.NoError(t, os.Chmod(filepath.Join(root, "ssl/private"), 0o700))
	write("ssh/ssh_config", 0o644)
	write("ssh/ssh_host_ed25519_key", 0o600)
	write("ssh/ssh_host_ed25519_key.pub", 0o644)
	require.NoError(t, os.Symlink("/root", filepath.Join(root, "link")))
	require.NoError(t, unix.Mkfifo(filepath.Join(root, "fifo"), 0o644))

	dirs, files := ReadableByAll(root)
	at := func(rel ...string) []string {
		var ps []string
		for _, r := range rel {
			ps = append(ps, filepath.Join(root, r))
		}
		return ps
	}
	assert.ElementsMatch(t, at("ssl/certs"), dirs)
	assert.ElementsMatch(t, at("hosts", "ssl/openssl.cnf", "ssh/ssh_config", "ssh/ssh_host_ed25519_key.pub"), files)

	// A folder every user may read whole is one rule.
	whole := filepath.Join(root, "ssl", "certs")
	dirs, files = ReadableByAll(whole)
	assert.Equal(t, []string{whole}, dirs)
	assert.Empty(t, files)

	// A folder others may not enter gives nothing; nor does a missing one.
	dirs, files = ReadableByAll(filepath.Join(root, "ssl", "private"))
	assert.Empty(t, dirs)
	assert.Empty(t, files)
	dirs, files = ReadableByAll(filepath.Join(root, "missing"))
	assert.Empty(t, dirs)
	assert.Empty(t, files)
}
