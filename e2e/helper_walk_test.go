package e2e

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestAttackHelperFollowsHostileMount: the privileged helper of a confined mount walks nothing the serving daemon
// answers. A test build of the daemon lies as a compromised one would (mount/nodes/fault_on.go, op hostile): a bound
// session's folder is answered as a symlink to a host folder that holds a mount named workspace (another mount's
// bind, a CSI pod's). The helper then releases that session's binds (--max-binds 1, two more sessions made).
// Before, it unmounted <mnt>/sessions/<id>/workspace by path, followed the link, and unmounted the host's mount.
func TestAttackHelperFollowsHostileMount(t *testing.T) {
	need(t, os.Geteuid() == 0, "the helper of a confined mount is root's")
	exe := filepath.Join(t.TempDir(), "sessionfs-fault")
	build := exec.Command("go", "build", "-tags", "faultinject", "-o", exe, "../cmd/sessionfs")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build the fault-injection daemon: %s", out)

	host := t.TempDir()
	hostMount := filepath.Join(host, "workspace")
	require.NoError(t, os.Mkdir(hostMount, 0o755))
	require.NoError(t, unix.Mount("tmpfs", hostMount, "tmpfs", 0, ""))
	t.Cleanup(func() { _ = unix.Unmount(hostMount, unix.MNT_DETACH) })
	require.NoError(t, os.WriteFile(filepath.Join(hostMount, "host-file"), []byte("host\n"), 0o644))

	store := t.TempDir()
	ok(t, store, "new", "a")
	m := mountWith(t, exe, store, "--max-binds", "1")
	bound := func(id string) func() bool {
		return func() bool {
			for _, e := range mountsUnder(t, m.mnt) {
				if e.point == filepath.Join(m.session(id), "workspace") {
					return true
				}
			}
			return false
		}
	}
	eventually(t, 10*time.Second, bound("a"), "session a is bound (the recently active ones are, at start)")

	_, err = os.Lstat(filepath.Join(m.mnt, "sessions", faultPrefix+"hostile-a="+url.PathEscape(host)))
	require.ErrorIs(t, err, syscall.EEXIST, "the daemon lies about session a from now on")
	eventually(t, 10*time.Second, func() bool {
		st, err := os.Lstat(m.session("a"))
		return err == nil && st.Mode()&os.ModeSymlink != 0
	}, "the kernel meets the lie: sessions/a is a link to the host folder")

	// A new session is bound at once (the watcher sees it), which releases a; the next one, bound by the same
	// worker after that release, shows it is over.
	ok(t, store, "new", "b")
	eventually(t, 10*time.Second, bound("b"), "session b is bound")
	ok(t, store, "new", "c")
	eventually(t, 10*time.Second, bound("c"), "session c is bound")
	mounted := false
	for _, e := range mountsUnder(t, host) {
		mounted = mounted || e.point == hostMount
	}
	assert.True(t, mounted, "the host's mount named workspace is still mounted")
	b, err := os.ReadFile(filepath.Join(hostMount, "host-file"))
	require.NoError(t, err)
	assert.Equal(t, "host\n", string(b))
}
