package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// daemonMemoryLimit is the memory cgroup limit TestAttackDaemonUnderMemoryLimit serves under (the daemon, its
// holder and the store's page cache they read through), as a unit's MemoryMax or a pod's limit would be set.
// SESSIONFS_TEST_MEMORY_LIMIT (MiB) changes it, to measure.
const daemonMemoryLimit = 128 << 20

// TestAttackDaemonUnderMemoryLimit (issue 49, "What to build" 5): the mount serves in a memory cgroup of 128 MiB
// with no swap, as under a systemd unit's MemoryMax or a pod's limit, while one session's processes (uid 65534 on
// an --allow-other mount, the session's files theirs) read through the text view everything round 4 found heavy:
// four conversations whose subagents are 100 hard links each of a 64 MiB transcript (two readers of each), and a
// Gemini chat of four 16 MiB lines of 1.4 million tool calls (ls -l and cat of its rendering, in a loop). For 20 s.
// The kernel kills nothing in the cgroup, no daemon takes over (the one serving is the one that began), and another
// session's cat of its own conversation is answered each second, whole.
func TestAttackDaemonUnderMemoryLimit(t *testing.T) {
	need(t, os.Geteuid() == 0, "a memory cgroup of the test's own; the attacker reads as uid 65534 on an --allow-other mount")
	limit := int64(daemonMemoryLimit)
	if v := os.Getenv("SESSIONFS_TEST_MEMORY_LIMIT"); v != "" {
		mib, err := strconv.Atoi(v)
		require.NoError(t, err)
		limit = int64(mib) << 20
	}
	cg := newMemoryCgroup(t, limit)
	store := t.TempDir()
	ok(t, store, "new", "s1") // the attacker's
	ok(t, store, "new", "s2") // another's
	canon := func(id string) string {
		return filepath.Join(store, "sessions", id, ".claude", "projects", "-session-workspace")
	}
	const victim = renderVictim
	convs := layRenderAttack(t, store)
	writeHostileGeminiChat(t, store, "s1", 4)
	giveSession(t, store, "s1")

	var procs []*exec.Cmd
	t.Cleanup(func() { // after the daemon stopped: a reader waits for its answer until then
		for _, p := range procs {
			_ = p.Wait()
		}
	})
	m := mountWith(t, cg.wrap(t, bin), store, "--allow-other")
	openUp(t, m.mnt)
	t.Cleanup(func() {
		for _, p := range procs {
			_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
		}
	})
	daemon := m.serverPID(t)
	require.NotEmpty(t, cg.holds(t), "the mount serves inside the cgroup")
	t.Logf("the cgroup: %d MiB, %d MiB used at start (processes %v)", limit>>20, cg.peak(t)>>20, cg.holds(t))

	attack := func(script string) {
		cmd := exec.Command("sh", "-c", script)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		require.NoError(t, cmd.Start())
		procs = append(procs, cmd)
	}
	for c, id := range convs {
		main := filepath.Join(canon("s1"), id+".jsonl")
		view := filepath.Join(m.mnt, "conversations", "s1", "claude", id+".md")
		for r := range 2 {
			attack(fmt.Sprintf(`i=0; while :; do i=$((i+1)); echo '{"type":"user","message":{"role":"user","content":"%d-%d-'$i'"},"timestamp":"2026-11-26T02:00:00Z"}' >> %s; cat %s > /dev/null 2>&1; sleep 0.05; done`,
				c, r, main, view))
		}
	}
	gemini := filepath.Join(m.mnt, "conversations", "s1", "gemini")
	attack(fmt.Sprintf(`while :; do ls -l %s > /dev/null 2>&1; cat %s/*.md > /dev/null 2>&1; sleep 0.05; done`, gemini, gemini))

	victimView := filepath.Join(m.mnt, "conversations", "s2", "claude", victim+".md")
	var took []time.Duration
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); {
		time.Sleep(time.Second)
		cmd := exec.Command("cat", victimView)
		var out syncBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		require.NoError(t, cmd.Start())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			took = append(took, time.Since(start))
			require.NoError(t, err, "the other session's cat under the attack: %s (mount: %s)", out.String(), m.log)
			require.Contains(t, out.String(), "prompt 199:", "the other session's conversation, whole")
		case <-time.After(20 * time.Second):
			m.stop(t)
			<-done
			t.Fatalf("the other session's cat had no answer in 20 s (oom kills: %d; mount: %s)", cg.oomKills(t), m.log)
		}
	}
	t.Logf("the cgroup's peak: %d MiB of %d MiB; the other session's cat took %v", cg.peak(t)>>20, limit>>20, took)
	assert.Zero(t, cg.oomKills(t), "processes the kernel killed for the cgroup's limit (mount: %s)", m.log)
	assert.Equal(t, daemon, m.serverPID(t), "the daemon that began serves still")
	assert.NotContains(t, m.log.String(), "took the connection over", "no daemon died")
}
