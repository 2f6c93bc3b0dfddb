package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDoctor: each check is one OK/WARN/FAIL line, and a stale mount is a FAIL with the fix.
func TestDoctor(t *testing.T) {
	store := t.TempDir()
	m := mount(t, store)
	r := cli(t, store, "doctor")
	assert.Regexp(t, `(?m)^OK\s+fuse\s`, r.stdout)
	assert.Regexp(t, `(?m)^OK\s+store\s+`+regexpQuote(store)+` writable`, r.stdout)
	assert.Regexp(t, `(?m)^OK\s+mount\s+`+regexpQuote(m.mnt), r.stdout)
	assert.Regexp(t, `(?m)^OK\s+sharing\s+the store's filesystem is not one other hosts mount`, r.stdout)
	assert.Regexp(t, `(?m)^(OK|WARN)\s+watches\s+fs\.inotify\.max_user_watches \d+: `, r.stdout)
	assert.Regexp(t, `(?m)^(OK|WARN)\s+docker\s`, r.stdout)
	assert.Regexp(t, `(?m)^(OK|WARN)\s+claude\s`, r.stdout)
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		assert.Regexp(t, `^(OK|WARN|FAIL) `, line)
	}
	m.kill(t)
	r = cli(t, store, "doctor")
	assert.Regexp(t, `(?m)^FAIL mount\s+.*stale.*sessionfs unmount`, r.stdout)
	assert.Equal(t, 1, r.code, "a FAIL makes doctor fail")
}

// TestDoctorAsNormalUser (issue 40, defects 6 and 14): as a user outside the docker group, doctor answers Docker's
// "permission denied" with the group (or sudo), not "start dockerd"; with no Modal set up it warns of no Modal
// credentials, and with MODAL_TOKEN_ID set it checks them.
func TestDoctorAsNormalUser(t *testing.T) {
	need(t, os.Geteuid() == 0, "needs root to run doctor as nobody")
	_, err := os.Stat("/var/run/docker.sock")
	need(t, err == nil, "needs the Docker socket")
	home := t.TempDir()
	require.NoError(t, os.Chmod(home, 0o777))
	store := filepath.Join(home, "store")
	doctor := func(env ...string) string {
		cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", bin, "doctor")
		cmd.Env = append(os.Environ(), append([]string{"HOME=" + home, "SESSIONFS_STORE=" + store, "DOCKER_HOST=",
			"MODAL_TOKEN_ID=", "MODAL_TOKEN_SECRET=", "MODAL_CONFIG_PATH="}, env...)...)
		return runResult(t, cmd).stdout
	}
	out := doctor()
	assert.Regexp(t, `(?m)^WARN\s+docker\s+.*permission denied.*\(add yourself to the docker group: .*; or use sudo`, out)
	assert.NotContains(t, out, "start dockerd")
	assert.NotRegexp(t, `(?m)^WARN\s+modal`, out, "Modal is not set up: nothing to warn about")
	assert.Regexp(t, `(?m)^OK\s+modal\s+not set up`, out)

	out = doctor("MODAL_TOKEN_ID=ak-x", "MODAL_TOKEN_SECRET=as-x", "MODAL_SERVER_URL=http://127.0.0.1:9")
	assert.Regexp(t, `(?m)^WARN\s+modal\s`, out, "Modal set up: its credentials are checked")
}
