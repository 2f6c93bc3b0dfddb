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

// TestAttackIndexMappedByRootShrunk: ls and find map the store's index when only their user can have written it.
// A user whose store root reads (uid 65534 here) owns the index folder, so it can link there any file it may
// write that root owns: a file a root container agent left in one of its sessions (a 0666 file root made, here).
// It puts that file in the index's place, grown to 48 MiB, and shrinks it 30 ms later, again and again. Root's ls
// must answer each time: before, root mapped the root-owned file and died of SIGBUS when it shrank ("unexpected
// fault address" in parseIndex; the first ls of the attack, and the root mount's daemon on its 10th mkdir). Now a
// file in a folder another user owns is read, never mapped.
func TestAttackIndexMappedByRootShrunk(t *testing.T) {
	need(t, os.Geteuid() == 0, "the reader is root, the attacker uid 65534")
	u := newUserPlace(t)
	exe := u.binary(t)
	out, err := u.run(exe, "new", "s1")
	require.NoError(t, err, out)
	out, err = u.run(exe, "ls") // the user's own ls makes the index
	require.NoError(t, err, out)
	require.FileExists(t, filepath.Join(u.store, "index", "sessions"))
	// What a root agent in a container writes into its bound workspace: root's file, which anyone may write.
	planted := filepath.Join(u.store, "sessions", "s1", "workspace", "planted")
	require.NoError(t, os.WriteFile(planted, nil, 0o666))
	require.NoError(t, os.Chmod(planted, 0o666))

	const attack = 30 * time.Second
	script := `end=$(( $(date +%s) + ` + "30" + ` ))
while [ "$(date +%s)" -lt "$end" ]; do
	printf 'sessionfs-index 1\n' > "$1"
	truncate -s 48M "$1"
	ln -f "$1" "$2"
	sleep 0.03
	truncate -s 0 "$1"
done`
	shrinker := u.command("sh", "-c", script, "sh", planted, filepath.Join(u.store, "index", "sessions"))
	require.NoError(t, shrinker.Start())
	t.Cleanup(func() { _ = shrinker.Process.Kill(); _ = shrinker.Wait() })

	tries, crashed := 0, 0
	deadline := time.Now().Add(attack - 5*time.Second)
	for ; time.Now().Before(deadline) && tries < 200; tries++ {
		for _, args := range [][]string{{"ls"}, {"find", "5e55f00d-0000-4000-8000-000000000001"}} {
			r := cli(t, u.store, args...)
			if strings.Contains(r.stderr, "unexpected fault") || strings.Contains(r.stderr, "SIGBUS") || r.code == 2 {
				crashed++
				t.Logf("root's %v crashed on try %d: %.300s", args, tries, r.stderr)
			} else if args[0] == "ls" {
				assert.Equal(t, 0, r.code, "root's ls on try %d: %s", tries, r.stderr)
			}
		}
	}
	t.Logf("%d tries of root's ls and find while uid 65534 shrank a root-owned file in the index's place", tries)
	assert.Zero(t, crashed, "root's ls and find never die of the shrunk file")
	assert.Greater(t, tries, 10, "the attack ran")
}
