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

// -e KEY passes the shell's value as docker does; -e =x is refused; gc --idle takes days and refuses negatives.
func TestEnvAndIdleFlags(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	r := cliIn(t, store, "", []string{"SFS_FROM_SHELL=passed"}, "exec", "-e", "SFS_FROM_SHELL", "-e", "SFS_UNSET_XYZ", "-e", "A=1", "s1", "--",
		"sh", "-c", `echo "$SFS_FROM_SHELL ${SFS_UNSET_XYZ-unset} $A"`)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "passed unset 1\n", r.stdout)
	r = cli(t, store, "exec", "-e", "=x", "s1", "--", "true")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "want KEY=VALUE")

	assert.Equal(t, 0, cli(t, store, "gc", "--idle", "30d", "--dry-run").code)
	r = cli(t, store, "gc", "--idle", "-5h")
	assert.Contains(t, r.stderr, "positive duration")
}

// Ctrl-C (or kill -INT) of exec reaches the command as a shell passes it: its INT trap runs to its end and its
// exit code is exec's (130 here), where the command used to get SIGTERM at once and exec exited 143.
func TestExecForwardsSignals(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	for _, mounted := range []bool{false, true} {
		if mounted {
			mount(t, store)
		}
		done := filepath.Join(t.TempDir(), "cleaned")
		cmd := exec.Command(bin, "exec", "s1", "--", "sh", "-c",
			`trap 'kill $! 2>/dev/null; sleep 0.3; echo cleaned > "$DONE"; exit 130' INT; echo started; sleep 60 & wait`)
		cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store, "DONE="+done)
		startUntil(t, cmd, "started\n")
		require.NoError(t, cmd.Process.Signal(os.Interrupt))
		err := cmd.Wait()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		assert.Equal(t, 130, exit.ExitCode(), "the command's own exit code (mounted=%v)", mounted)
		b, err := os.ReadFile(done)
		require.NoError(t, err, "the command's INT trap ran to its end (mounted=%v)", mounted)
		assert.Equal(t, "cleaned\n", string(b))
	}
}

// exec -w of a folder the session lacks is one line and exit 125 (it was 127 with "chdir ... no such file", and on
// the mount a false note that the sessionfs binary was missing); -w ../.. says it is outside the session.
func TestExecBadWorkdir(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	for _, mounted := range []bool{false, true} {
		if mounted {
			mount(t, store)
		}
		r := cli(t, store, "exec", "-w", "missing", "s1", "--", "true")
		assert.Equal(t, 125, r.code, r.stderr)
		assert.Contains(t, r.stderr, "missing: no such folder in the session")
		assert.NotContains(t, r.stderr, "chdir ")
		assert.NotContains(t, r.stderr, "executable")
		r = cli(t, store, "exec", "-w", "../..", "s1", "--", "true")
		assert.Equal(t, 125, r.code, r.stderr)
		assert.Contains(t, r.stderr, "-w ../..: outside the session")
		assert.NotContains(t, r.stderr, "map (")
	}
}

// TestExecHeavyFoldersAreNative: sessionfs exec on the mount runs in a private mount namespace where the
// session's heavy folders are the store's (same paths, no FUSE), its writes show through the mount, and a
// workspace the session made a link is refused, never bound.
func TestExecHeavyFoldersAreNative(t *testing.T) {
	need(t, os.Geteuid() == 0, "the root path of exec; TestMountAsNormalUser covers users")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	// Without the mount's own binds (--max-binds 0), to see exec's.
	m := mount(t, store, "--max-binds", "0")
	out := ok(t, store, "exec", "s1", "--", "sh", "-c", `pwd; cat /proc/self/mountinfo; echo made > made.txt`)
	pwd, info, _ := strings.Cut(out, "\n")
	assert.Equal(t, filepath.Join(m.session("s1"), "workspace"), pwd, "the same path as on the mount")
	types := fstypes(info)
	for _, rel := range []string{"workspace", "app", "mcps", ".claude/projects/-session-workspace"} {
		p := filepath.Join(m.session("s1"), rel)
		require.Contains(t, types, p)
		assert.False(t, strings.HasPrefix(types[p], "fuse"), "%s is the store's folder: %s", p, types[p])
		assertNoSuidNoDev(t, info, p)
	}
	within100ms(t, "a file written through exec's bind", func() bool {
		b, err := os.ReadFile(filepath.Join(m.session("s1"), "workspace", "made.txt"))
		return err == nil && string(b) == "made\n"
	})
	assert.False(t, strings.Contains(fstypesOfHost(t)[filepath.Join(m.session("s1"), "workspace")], "ext"), "the binds stay in exec's namespace")

	secret := hostSecret(t)
	ws := filepath.Join(store, "sessions", "s1", "workspace")
	require.NoError(t, os.Rename(ws, ws+"-old"))
	require.NoError(t, os.Symlink(secret, ws))
	r := cli(t, store, "exec", "s1", "--", "sh", "-c", "cat secret; echo owned > planted")
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Contains(t, r.stderr, "not a folder of the session")
	assert.NotContains(t, r.stdout, hostMarker)
	assertSecretUntouched(t, secret)
}

func fstypesOfHost(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	return fstypes(string(b))
}
