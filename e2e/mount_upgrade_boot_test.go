package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestMountUpgradeAfterBoot: /run is a tmpfs, empty after each boot. The first confined root mount's holder makes
// /run/sessionfs for both its state file (doctor's) and its control socket; the socket must be listening, so
// that sessionfs mount on the mountpoint hands it over to a new binary, whichever of the two made the folder.
// Run in a mount namespace of its own with a fresh tmpfs on /run (the host's /run and its mounts untouched).
func TestMountUpgradeAfterBoot(t *testing.T) {
	need(t, os.Geteuid() == 0, "needs root (a confined mount has a holder)")
	needFUSE(t)
	_, err := exec.LookPath("unshare")
	need(t, err == nil, "unshare (util-linux) is missing")
	store, mnt := t.TempDir(), t.TempDir()
	ok(t, store, "new", "s1")
	log := filepath.Join(t.TempDir(), "mount.log")
	// Polls (at most 10 s) for the socket the holder makes once the mount serves: an event of another process's
	// in another mount namespace, which the test cannot await otherwise.
	script := `set -u
mount -t tmpfs tmpfs /run || exit 90
"$B" mount "$MNT" --daemon --log "$LOG" >/dev/null || exit 91
trap '"$B" unmount "$MNT" >/dev/null 2>&1' EXIT
for i in $(seq 100); do ls /run/sessionfs/mount-*.sock >/dev/null 2>&1 && break; sleep 0.1; done
echo "folder: $(stat -c %a /run/sessionfs)"
echo "sockets: $(ls /run/sessionfs | grep -c '^mount-.*\.sock$')"
timeout 60 "$B" mount "$MNT" >/dev/null 2>&1
echo "upgrade: $?"
`
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "B="+bin, "MNT="+mnt, "LOG="+log, "SESSIONFS_STORE="+store)
	out, err := cmd.CombinedOutput()
	logged, _ := os.ReadFile(log)
	t.Logf("after a fresh /run:\n%s", out)
	if err != nil {
		t.Fatalf("the mount in a fresh /run: %v\n%s\nits log:\n%s", err, out, logged)
	}
	assert.Contains(t, string(out), "folder: 700", "/run/sessionfs is root's alone")
	assert.Contains(t, string(out), "sockets: 1", "the holder listens on its control socket")
	assert.Contains(t, string(out), "upgrade: 0", "sessionfs mount hands the mount over")
	assert.NotContains(t, string(logged), "cannot hand this mount over", "the daemon's log")
	if t.Failed() {
		t.Logf("the daemon's log:\n%s", strings.TrimSpace(string(logged)))
	}
}
