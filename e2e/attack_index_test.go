package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAttackIndexKeepsPrivateSessionsPrivate: a session whose folder its owner made private (0700) keeps its
// session.json from other users; the sessions index ls writes (<store>/index/sessions, a copy of every session's
// metadata) must not hand it to them either: another user (uid 65534) cannot read the index.
func TestAttackIndexKeepsPrivateSessionsPrivate(t *testing.T) {
	need(t, os.Geteuid() == 0, "reads as uid 65534")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ok(t, store, "new", "s2", "--label", "secret=tangerine")
	require.NoError(t, os.Chmod(filepath.Join(store, "sessions", "s2"), 0o700))
	openUp(t, filepath.Join(store, "sessions"))
	require.Contains(t, ok(t, store, "ls"), "s2") // writes the index
	asNobody := func(args ...string) (string, error) {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := asNobody("cat", filepath.Join(store, "sessions", "s2", "session.json"))
	require.Error(t, err, "the store denies 65534 the private session's metadata: %s", out)
	out, err = asNobody("cat", filepath.Join(store, "index", "sessions"))
	t.Logf("uid 65534 reading the index: %v", err)
	assert.NotContains(t, out, "tangerine", "the index handed 65534 a private session's labels")
}
