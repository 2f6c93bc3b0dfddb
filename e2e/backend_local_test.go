package e2e

import (
	"fmt"
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

// exec -w is relative to the workspace (it was relative to the session's root) and a folder it names that is
// missing is made, as docker run -w does (it was refused with exit 125), mounted or not; -w ../.. says it is
// outside the session.
func TestExecBadWorkdir(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	for _, mounted := range []bool{false, true} {
		dir := filepath.Join(store, "sessions", "s1")
		if mounted {
			dir = mount(t, store).session("s1")
		}
		want := filepath.Join(dir, "workspace", fmt.Sprintf("missing-%v", mounted), "deeper")
		r := cli(t, store, "exec", "-w", fmt.Sprintf("missing-%v/deeper", mounted), "s1", "--", "pwd")
		assert.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, want+"\n", r.stdout, "mounted=%v", mounted)
		assert.DirExists(t, filepath.Join(store, "sessions", "s1", "workspace", fmt.Sprintf("missing-%v", mounted), "deeper"))
		r = cli(t, store, "exec", "-w", "..", "s1", "--", "pwd")
		assert.Equal(t, dir+"\n", r.stdout, "-w .. is the session's root (mounted=%v) %s", mounted, r.stderr)
		r = cli(t, store, "exec", "-w", "../..", "s1", "--", "true")
		assert.Equal(t, 125, r.code, r.stderr)
		assert.Contains(t, r.stderr, "-w ../..: outside the session")
		assert.NotContains(t, r.stderr, "map (")
	}
}

// exec ID CMD ARGS runs CMD without "--", as docker exec does, and what follows CMD is CMD's own (it was refused:
// "want ID -- CMD"); exec ID alone starts the user's shell; "--" and flags before it still work.
func TestExecWithoutDashes(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ws := filepath.Join(store, "sessions", "s1", "workspace")
	r := cli(t, store, "exec", "s1", "sh", "-c", `echo "$0 $*"`, "-w", "--help")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "-w --help\n", r.stdout, "the command's arguments are its own")
	r = cli(t, store, "exec", "s1", "-w", "api", "--", "pwd")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, filepath.Join(ws, "api")+"\n", r.stdout, "sessionfs's flags after the id, ended by --")

	r = cliWith(t, store, "", []string{"SHELL=/bin/sh"}, strings.NewReader("echo \"shell in $PWD\"\n"), "exec", "s1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "shell in "+ws+"\n", r.stdout, "exec ID alone runs $SHELL")
	r = cliWith(t, store, "", []string{"SHELL="}, strings.NewReader("echo \"sh: $0\"\n"), "exec", "s1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "sh: /bin/sh\n", r.stdout, "no $SHELL: /bin/sh")
}

// --env-file reads docker's env files for exec: KEY=VALUE as written, # comments, KEY alone passes the value;
// -e wins.
func TestExecEnvFile(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	f := filepath.Join(t.TempDir(), "env")
	require.NoError(t, os.WriteFile(f, []byte("# settings\nA=from file\nB=\"quoted\"\nFROM_SHELL\n"), 0o600))
	r := cliIn(t, store, "", []string{"FROM_SHELL=passed"}, "exec", "--env-file", f, "-e", "B=flag", "s1", "sh", "-c", `echo "$A|$B|$FROM_SHELL"`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "from file|flag|passed\n", r.stdout)
	require.NoError(t, os.WriteFile(f, []byte("BAD KEY=1\n"), 0o600))
	r = cli(t, store, "exec", "--env-file", f, "s1", "true")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, f+", line 1")
}

// Without the mount, exec says "only from the cwd it began in" only of what it is true of (Claude Code before
// 2.1.234, agents with cwd-keyed folders); it said "transcripts resume only from the same cwd" for every run.
func TestExecNotMountedWarning(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	r := cli(t, store, "exec", "s1", "--", "true")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "the store is not mounted")
	assert.Contains(t, r.stderr, "Claude Code before 2.1.234 resumes a conversation only from the cwd it began in")
	assert.NotContains(t, r.stderr, "transcripts resume only from the same cwd")
	r = cli(t, store, "exec", "--agent", "codex", "s1", "--", "true")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "resume", "codex keeps no cwd-keyed folder: nothing to warn of")
	r = cli(t, store, "doctor")
	assert.NotContains(t, r.stdout+r.stderr, "transcripts resume only from the cwd they began in")
	assert.Contains(t, r.stdout+r.stderr, "Claude Code before 2.1.234")
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
