package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// memoryCgroup is a memory cgroup of the test's own, under this process's (cgroup v2, or v1's memory hierarchy),
// limited to limit bytes with no swap: what a systemd unit's MemoryMax or a pod's memory limit makes.
type memoryCgroup struct {
	dir string
	v2  bool
}

// newMemoryCgroup makes the cgroup; it is removed, its processes moved back first, when the test ends.
func newMemoryCgroup(t *testing.T, limit int64) *memoryCgroup {
	t.Helper()
	parent, v2 := ownMemoryCgroup(t)
	cg := &memoryCgroup{dir: filepath.Join(parent, fmt.Sprintf("sessionfs-test-%d", time.Now().UnixNano())), v2: v2}
	require.NoError(t, os.Mkdir(cg.dir, 0o755), "a memory cgroup for the test")
	t.Cleanup(func() {
		procs := filepath.Join(parent, "cgroup.procs")
		for range 50 {
			b, _ := os.ReadFile(filepath.Join(cg.dir, "cgroup.procs"))
			for _, pid := range strings.Fields(string(b)) {
				_ = os.WriteFile(procs, []byte(pid), 0o644)
			}
			if os.Remove(cg.dir) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("the test's memory cgroup %s could not be removed", cg.dir)
	})
	n := strconv.FormatInt(limit, 10)
	if v2 {
		require.NoError(t, os.WriteFile(filepath.Join(cg.dir, "memory.max"), []byte(n), 0o644))
		_ = os.WriteFile(filepath.Join(cg.dir, "memory.swap.max"), []byte("0"), 0o644) // no swap accounting: none to limit
		return cg
	}
	require.NoError(t, os.WriteFile(filepath.Join(cg.dir, "memory.limit_in_bytes"), []byte(n), 0o644))
	_ = os.WriteFile(filepath.Join(cg.dir, "memory.memsw.limit_in_bytes"), []byte(n), 0o644) // with swap accounting
	return cg
}

// ownMemoryCgroup is the folder of this process's memory cgroup, and whether it is cgroup v2's.
func ownMemoryCgroup(t *testing.T) (string, bool) {
	t.Helper()
	f, err := os.Open("/proc/self/cgroup")
	require.NoError(t, err)
	defer f.Close()
	var v1, v2 string
	s := bufio.NewScanner(f)
	for s.Scan() {
		parts := strings.SplitN(s.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case strings.Contains(","+parts[1]+",", ",memory,"):
			v1 = parts[2]
		}
	}
	if v1 != "" {
		return filepath.Join("/sys/fs/cgroup/memory", v1), false
	}
	dir := filepath.Join("/sys/fs/cgroup", v2)
	ctl, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers")
	need(t, err == nil && strings.Contains(string(ctl), "memory"), "a memory cgroup controller (v1 or v2)")
	return dir, true
}

// wrap is a script that runs exe inside the cgroup: what a unit's ExecStart runs in its cgroup.
func (cg *memoryCgroup) wrap(t *testing.T, exe string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "in-cgroup")
	require.NoError(t, os.WriteFile(script, []byte(fmt.Sprintf("#!/bin/sh\necho $$ > %s/cgroup.procs || exit 125\nexec %s \"$@\"\n",
		cg.dir, exe)), 0o755))
	return script
}

// peak is the cgroup's peak memory use, in bytes.
func (cg *memoryCgroup) peak(t *testing.T) int64 {
	name := "memory.max_usage_in_bytes"
	if cg.v2 {
		name = "memory.peak"
	}
	b, err := os.ReadFile(filepath.Join(cg.dir, name))
	require.NoError(t, err)
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	require.NoError(t, err)
	return n
}

// oomKills is how many of the cgroup's processes the kernel killed for its limit.
func (cg *memoryCgroup) oomKills(t *testing.T) int {
	name := "memory.oom_control"
	if cg.v2 {
		name = "memory.events"
	}
	b, err := os.ReadFile(filepath.Join(cg.dir, name))
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "oom_kill "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("%s names no oom_kill count (Linux 4.13 does)", name)
	return 0
}

// holds lists the cgroup's processes.
func (cg *memoryCgroup) holds(t *testing.T) []string {
	b, err := os.ReadFile(filepath.Join(cg.dir, "cgroup.procs"))
	require.NoError(t, err)
	return strings.Fields(string(b))
}
