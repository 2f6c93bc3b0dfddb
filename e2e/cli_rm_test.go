package e2e

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Several rm errors are one line each.
func TestRmErrorsOneALine(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	r := cli(t, store, "rm", "nope1", "s1", "nope2")
	assert.Equal(t, 125, r.code)
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	require.Len(t, lines, 2, r.stderr)
	assert.Contains(t, lines[0], "nope1")
	assert.Contains(t, lines[1], "nope2")
	assert.Contains(t, r.stdout, "s1 -> ", "the good one is removed")
}

// rm of a session something runs in is refused with the lease's message, as rename is (the run would go on in the
// trash and its record be lost); --force removes it all the same.
func TestRmOfARunningSession(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "web")
	holder := startRunner(t, store, nil, "exec", "web", "--", "sh", "-c", holding+"; exec sleep 60")
	eventually(t, 20*time.Second, func() bool { return strings.Contains(holder.out.String(), "holding the lease") },
		"the holder never ran: %s", holder.out)
	r := cli(t, store, "rm", "web")
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Regexp(t, `session web is running on host \S+ \(pid \d+\) since \d\d:\d\d \(--force removes it all the same\)`, r.stderr)
	assert.DirExists(t, filepath.Join(store, "sessions", "web"))
	r = cli(t, store, "rm", "--force", "web")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NoDirExists(t, filepath.Join(store, "sessions", "web"))
}

// TestDidYouMean (issue 40, defect 14): a mistyped session name is answered with the close ones (another case, a
// letter off), and a mistyped command with cobra's suggestions, one a line.
func TestDidYouMean(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "scratch")
	ok(t, store, "new", "demo")
	r := cli(t, store, "rm", "scrach")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "did you mean scratch?")
	r = cli(t, store, "rm", "Demo")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "did you mean demo?")
	assert.DirExists(t, filepath.Join(store, "sessions", "demo"), "nothing is removed on a guess")
	r = cli(t, store, "show", "nothing-like-it")
	assert.NotContains(t, r.stderr, "did you mean")

	r = cli(t, store, "lss")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "\n\nDid you mean this?\n\tls\n", "suggestions one a line, as cobra prints them")
}

// Defect 11 of issue 40: rm of a session a process uses through the mount (here a process's working folder in its
// workspace) emptied its folder without a word; it is refused, naming the process, unless --force. A session no
// process uses (the daemon's own work is none) is removed as before.
func TestRmOfASessionAProcessUses(t *testing.T) {
	needRootMount(t)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ok(t, store, "new", "s2")
	m := mount(t, store)
	waitBound(t, m, "s1")
	sleeper := exec.Command("sleep", "60")
	sleeper.Dir = filepath.Join(m.session("s1"), "workspace")
	require.NoError(t, sleeper.Start())
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })

	r := cli(t, store, "rm", "s1")
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Regexp(t, `session s1 is in use through the mount by `+strconv.Itoa(sleeper.Process.Pid)+` sleep: .*\(--force removes it all the same\)`, r.stderr)
	assert.DirExists(t, filepath.Join(store, "sessions", "s1"))
	assert.Equal(t, 0, cli(t, store, "rm", "s2").code, "no process uses s2")

	r = cli(t, store, "rm", "--force", "s1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NoDirExists(t, filepath.Join(store, "sessions", "s1"))
}

// Defect 11 of issue 40: a container started by hand with docker run -v <mount>/sessions/ID:/session (no label of
// sessionfs's, its working folder its own /) is found through its mount table, and rm names it.
func TestRmOfASessionAHandStartedContainerUses(t *testing.T) {
	needRootMount(t)
	images(t, needDocker(t), "")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	waitBound(t, m, "s1")
	name := "sessionfs-e2e-rm-" + runTag
	out, err := exec.Command("docker", "run", "-d", "--name", name, "-v", m.session("s1")+":/session", busyboxImage, "sleep", "60").CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
	container := strings.TrimSpace(string(out))[:12]

	r := cli(t, store, "rm", "s1")
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Regexp(t, `session s1 is in use through the mount by \d+ sleep \(container `+container+`\)`, r.stderr)
	assert.Contains(t, r.stderr, "--force")
	assert.DirExists(t, filepath.Join(store, "sessions", "s1"))
	out, err = exec.Command("docker", "exec", name, "ls", "/session").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "workspace", "the container's /session is whole")

	r = cli(t, store, "rm", "--force", "s1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NoDirExists(t, filepath.Join(store, "sessions", "s1"))
}
