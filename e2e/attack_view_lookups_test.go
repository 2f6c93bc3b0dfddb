package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAttackViewLookupsKeepNoMemory: the daemon noted, for every file looked up through a transcript view, which
// view it was (so that a write through it binds that view), by the file's path, and never forgot one. A session's
// process (uid 65534 on an --allow-other mount, the session's files its own) makes files in its transcript folder
// (as through its bind in a container), lists them through a view, and removes them, round after round with new
// names: the daemon's memory grew by every name, for good. Bound: after 200,000 names, the daemon's RSS is within
// 16 MiB of what it was after the first round; another session's listing is timed before and after.
func TestAttackViewLookupsKeepNoMemory(t *testing.T) {
	need(t, os.Geteuid() == 0, "the attacker runs as uid 65534 on an --allow-other mount")
	const rounds, perRound = 4, 50000
	store := t.TempDir()
	ok(t, store, "new", "s1") // the attacker's
	ok(t, store, "new", "s2") // another's
	giveSession(t, store, "s1")
	canon := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
	openUp(t, canon)
	victimDir := filepath.Join(store, "sessions", "s2", ".claude", "projects", "-session-workspace")
	require.NoError(t, os.WriteFile(filepath.Join(victimDir, "5e55f00d-0000-4000-8000-000000000002.jsonl"),
		[]byte(`{"type":"user","message":{"role":"user","content":"hi"}}`+"\n"), 0o644))

	m := mount(t, store, "--allow-other")
	openUp(t, m.mnt)
	view := filepath.Join(m.mnt, "sessions", "s1", ".claude", "projects", "-home-attacker-proj")
	victim := filepath.Join(m.mnt, "sessions", "s2", ".claude", "projects", "-home-user-proj")
	daemon := m.serverPID(t)

	round := func(r int) {
		t.Helper()
		names := fmt.Sprintf(`seq -f 'r%d-%%06g' %d`, r, perRound)
		script := fmt.Sprintf(`set -e; cd %s; %s | xargs touch; ls -l %s > /dev/null; %s | xargs rm -f`, canon, names, view, names)
		cmd := exec.Command("sh", "-c", script)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "round %d: %s (mount: %s)", r, out, m.log)
	}
	listVictim := func() time.Duration {
		start := time.Now()
		out, err := exec.Command("ls", "-l", victim).CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "5e55f00d-0000-4000-8000-000000000002.jsonl")
		return time.Since(start)
	}
	// settled is the daemon's RSS once it stops falling: the removed files' nodes forgotten, the heap's limit
	// following what is live (nodes.LimitMemory).
	settled := func() int64 {
		last := int64(-1)
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(2 * time.Second) {
			var now int64
			_, err := fmt.Sscanf(procStatus(t, daemon)["VmRSS"], "%d kB", &now)
			require.NoError(t, err)
			if last >= 0 && now >= last-256 {
				return now
			}
			last = now
		}
		return last
	}

	before := listVictim()
	round(0) // the maps and the runtime grown to a round's size
	base := settled()
	for r := 1; r < rounds; r++ {
		round(r)
	}
	after := settled()
	under := listVictim()
	t.Logf("%d names looked up through a view in %d rounds: the daemon's RSS %d MiB after the first, %d MiB after the last; another session's ls -l took %v before, %v after",
		rounds*perRound, rounds, base>>10, after>>10, before, under)
	assert.Less(t, after-base, int64(16<<10), "the daemon's memory grew with the names looked up (mount: %s)", m.log)
	assert.Equal(t, daemon, m.serverPID(t), "the daemon that began serves still")
}
