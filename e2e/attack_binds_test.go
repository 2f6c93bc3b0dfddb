package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The attacks on the one bind primitive (package bind): a session's process keeps exchanging one of its heavy
// folders with a symlink to a host folder while sessionfs binds that folder. Whatever wins the race, nothing of
// the session may show at the host folder, and the host folder's own files must stay where they are.

// TestAttackRunNamespaceSwap: `sessionfs exec` on a mount whose daemon binds nothing (--max-binds 0) binds the
// store's workspace over the mount's in the run's namespace. The session's process (uid 65534 on an --allow-other
// mount) exchanges workspace with a symlink to a host folder, through the mount, while root runs exec again and
// again. Before the one primitive, the bind's target was a path and mount(2) followed the link: the run saw the
// session's files at the host folder (its /etc, its /usr/bin).
func TestAttackRunNamespaceSwap(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: the run binds in a namespace of its own, and the attacker is another uid")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	host := t.TempDir()
	require.NoError(t, os.Chmod(host, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(host, "host-file"), []byte("host\n"), 0o644))
	s1 := giveSession(t, store, "s1")
	require.NoError(t, os.WriteFile(filepath.Join(s1, "workspace", "session-file"), []byte("session\n"), 0o644))
	require.NoError(t, os.Lchown(filepath.Join(s1, "workspace", "session-file"), 65534, 65534))
	require.NoError(t, os.Symlink(host, filepath.Join(s1, "ws-link")))
	require.NoError(t, os.Lchown(filepath.Join(s1, "ws-link"), 65534, 65534))
	m := mount(t, store, "--allow-other", "--max-binds", "0")
	openUp(t, m.mnt)
	onMount := m.session("s1")
	startExchanger(t, filepath.Join(onMount, "workspace"), filepath.Join(onMount, "ws-link"))

	const maxTries = 400
	deadline := time.Now().Add(3 * time.Minute)
	tries, ran, refused := 0, 0, 0
	for tries < maxTries && time.Now().Before(deadline) {
		tries++
		r := cli(t, store, "exec", "s1", "--", "ls", host)
		if r.code == 0 {
			ran++
		} else {
			refused++
		}
		if strings.Contains(r.stdout, "session-file") {
			t.Fatalf("after %d runs: the session's workspace was bound over the host folder %s (the run listed %q)", tries, host, r.stdout)
		}
	}
	t.Logf("%d runs while the workspace was exchanged with a link to %s: %d ran, %d refused (a folder that was a link when bound); the session never showed at the host folder", tries, host, ran, refused)
	assert.Positive(t, ran, "some runs went ahead (the race is real, not a refusal of every run)")
	assert.Positive(t, refused, "some runs met the link (the exchanger raced them)")
	b, err := os.ReadFile(filepath.Join(host, "host-file"))
	require.NoError(t, err)
	assert.Equal(t, "host\n", string(b))
}
