package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDockerSharedCredentials: a session made with new --share-credentials sees the user's login in a container,
// read-only, mounted or not (before, its link to the host file dangled there); a session that planted the same
// link itself gets nothing.
func TestDockerSharedCredentials(t *testing.T) {
	images(t, needDocker(t), "")
	home := usersClaude(t) // its login holds {"token":"t"}
	creds := filepath.Join(home, ".claude", ".credentials.json")
	store := t.TempDir()
	r := cliIn(t, store, "", []string{"HOME=" + home, seedFromUser}, "new", "s1", "--share-credentials")
	require.Equal(t, 0, r.code, r.stderr)
	r = cliIn(t, store, "", []string{"HOME=" + home, seedFromUser}, "new", "planted")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, os.Symlink(creds, filepath.Join(store, "sessions", "planted", ".claude", ".credentials.json")))

	const script = `cat /session/.claude/.credentials.json && echo; echo x > /session/.claude/.credentials.json && echo WROTE; true`
	for _, mounted := range []bool{false, true} {
		if mounted {
			mount(t, store)
		}
		r = dockerRun(t, store, "--image", busyboxImage, "s1", "--", "sh", "-c", script)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, `{"token":"t"}`, "mounted=%v: %s", mounted, r.stderr)
		assert.NotContains(t, r.stdout, "WROTE", "the login is bound read-only")
		b, err := os.ReadFile(creds)
		require.NoError(t, err)
		assert.Equal(t, `{"token":"t"}`, string(b))

		r = dockerRun(t, store, "--image", busyboxImage, "planted", "--", "sh", "-c", script)
		assert.NotContains(t, r.stdout, `"token"`, "a link the session made itself shares nothing")
	}
}
