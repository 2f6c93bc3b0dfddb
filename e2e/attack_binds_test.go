package e2e

import (
	"fmt"
	"os"
	"os/exec"
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

// assertBindsInside checks every mount beneath the mount is a bind of a folder inside the store's folder of the
// session it is mounted in.
func assertBindsInside(t *testing.T, m *mounted, store string) {
	t.Helper()
	for _, e := range mountsUnder(t, m.mnt) {
		rel, found := strings.CutPrefix(e.point, m.mnt+"/sessions/")
		require.True(t, found, "a mount outside sessions/: %v", e)
		id, _, _ := strings.Cut(rel, "/")
		assert.True(t, strings.HasPrefix(e.root, filepath.Join(store, "sessions", id)+"/"),
			"%s shows %s, which is not inside session %s", e.point, e.root, id)
	}
}

// inSessionFolder runs script in a busybox container given the store's own folder of a session at /session, as
// any process of the session may have it (a sessionfs run binds the heavy folders apart, which a process then
// cannot rename).
func inSessionFolder(t *testing.T, store, id, script string) result {
	t.Helper()
	return runResult(t, exec.Command("docker", "run", "--rm", "-v", filepath.Join(store, "sessions", id)+":/session", busyboxImage, "sh", "-c", script))
}

// TestAttackBoundFolderSwap: a session's process that swaps its folders for a link to a host folder, a FIFO or
// a link to another session's folder, before, during and after binding, gets nothing bound outside its session.
func TestAttackBoundFolderSwap(t *testing.T) {
	needRootMount(t)
	dockerContainment(t)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ok(t, store, "new", "other")
	fill(t, store, "s1", "app", "mcps")
	secret := hostSecret(t)

	// Before: a link out and a FIFO where workspace and app were.
	r := inSessionFolder(t, store, "s1", fmt.Sprintf(`mv /session/workspace /session/ws-old && ln -s %s /session/workspace &&
		mv /session/app /session/app-old && mkfifo /session/app`, secret))
	require.Equal(t, 0, r.code, r.stderr)
	m := mount(t, store)
	waitBound(t, m, "other")
	eventually(t, 5*time.Second, func() bool { _, ok := bindsOf(t, m, "s1")["mcps"]; return ok }, "s1's mcps (still a folder) bound")
	time.Sleep(200 * time.Millisecond)
	binds := bindsOf(t, m, "s1")
	assert.NotContains(t, binds, "workspace", "a link is never bound")
	assert.NotContains(t, binds, "app", "a FIFO is never bound")
	assertBindsInside(t, m, store)
	assertNothingMountedIn(t, m.session("other"), secret)
	// Put back, and bound again.
	sess := filepath.Join(store, "sessions", "s1")
	require.NoError(t, os.Remove(filepath.Join(sess, "workspace")))
	require.NoError(t, os.Rename(filepath.Join(sess, "ws-old"), filepath.Join(sess, "workspace")))
	require.NoError(t, os.Remove(filepath.Join(sess, "app")))
	require.NoError(t, os.Rename(filepath.Join(sess, "app-old"), filepath.Join(sess, "app")))
	waitBound(t, m, "s1")

	// After: the bound mcps swapped for a link to the other session's bound workspace. The kernel detaches the
	// bind when the watcher invalidates the name; nothing is bound in its place.
	r = inSessionFolder(t, store, "s1", fmt.Sprintf(`mv /session/mcps /session/mcps-old && ln -s %s /session/mcps`,
		filepath.Join(store, "sessions", "other", "workspace")))
	require.Equal(t, 0, r.code, r.stderr)
	eventually(t, 5*time.Second, func() bool { _, ok := bindsOf(t, m, "s1")["mcps"]; return !ok }, "the swapped bind is gone")
	fi, err := os.Lstat(filepath.Join(m.session("s1"), "mcps"))
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, fi.Mode()&os.ModeType, "the mount shows the session's link, not a bind")
	assertNothingMountedIn(t, m.session("other"), filepath.Join(store, "sessions", "other", "workspace"))

	// During: the session flips workspace between a folder and links out while the host keeps looking it up
	// (each lookup and each event asks for a bind).
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, _ = os.Stat(filepath.Join(m.session("s1"), "workspace", "."))
			_, _ = os.ReadDir(m.session("s1"))
		}
	}()
	r = inSessionFolder(t, store, "s1", fmt.Sprintf(`mv /session/workspace /session/ws-old; i=0; while [ $i -lt 400 ]; do
		mv /session/ws-old /session/workspace; mv /session/workspace /session/ws-old
		ln -s %s /session/workspace; rm /session/workspace
		ln -s /session/../../.. /session/workspace; rm /session/workspace
		mkfifo /session/workspace; rm /session/workspace
		i=$((i+1)); done; mv /session/ws-old /session/workspace`, secret))
	close(stop)
	<-done
	require.Equal(t, 0, r.code, r.stderr)
	assertBindsInside(t, m, store)
	waitBound(t, m, "other")
	eventually(t, 5*time.Second, func() bool { _, ok := bindsOf(t, m, "s1")["workspace"]; return ok }, "the folder put back is bound")
	assertBindsInside(t, m, store)
	assertNothingMountedIn(t, m.session("other"), secret, "/etc", filepath.Join(store, "sessions", "other"))
	assertSecretUntouched(t, secret)
}
