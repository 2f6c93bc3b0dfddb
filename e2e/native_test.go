package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDockerHeavyFoldersAreNative: in a run on the mount, workspace/, app/, mcps/ and the canonical transcript
// folder are binds of the store (no FUSE round trip), /session and .claude stay the mount's (views work), and
// what the container writes through the binds shows through the mount within 100 ms.
func TestDockerHeavyFoldersAreNative(t *testing.T) {
	images(t, needDocker(t), "")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)

	r := inContainer(t, store, "s1", `cat /proc/self/mountinfo`)
	require.Equal(t, 0, r.code, r.stderr)
	types := fstypes(r.stdout)
	assert.True(t, strings.HasPrefix(types["/session"], "fuse"), "/session is the mount: %v", types)
	for _, p := range []string{"/session/workspace", "/session/app", "/session/mcps", "/session/.claude/projects/-session-workspace"} {
		require.Contains(t, types, p, "%s is bound", p)
		assert.False(t, strings.HasPrefix(types[p], "fuse"), "%s is bound from the store, not through FUSE: %s", p, types[p])
	}
	assertNoSuidNoDev(t, r.stdout, "/session/workspace", "/session/app", "/session/mcps", "/session/.claude/projects/-session-workspace")

	// Warm the mount's caches, then let a container write through its native bind.
	viaMount := filepath.Join(m.session("s1"), "workspace", "from-bind.txt")
	require.True(t, missing(viaMount))
	_, err := os.ReadDir(filepath.Join(m.session("s1"), "workspace"))
	require.NoError(t, err)
	cmd := exec.Command(bin, "run", "--backend", "docker", "--image", busyboxImage, "s1", "--", "sh", "-c",
		`echo bind > /session/workspace/from-bind.txt && echo '{"type":"user"}' >> /session/.claude/projects/-session-workspace/t.jsonl && echo written && sleep 2`)
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }() // Ctrl-C: the container is stopped and removed
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "written\n", line)
	within100ms(t, "a file written through a native bind", func() bool {
		b, err := os.ReadFile(viaMount)
		return err == nil && string(b) == "bind\n"
	})
	within100ms(t, "a transcript written through a native bind, in another cwd's view", func() bool {
		_, err := os.Stat(filepath.Join(m.session("s1"), ".claude", "projects", "-home-u-p", "t.jsonl"))
		return err == nil
	})
}

// TestDockerWorkspaceSwappedForALink: a container that replaces its workspace with a link to a host folder
// between runs gets a clear refusal on the next run, never a bind of that folder, mounted or not.
func TestDockerWorkspaceSwappedForALink(t *testing.T) {
	images(t, needDocker(t), "")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	secret := hostSecret(t)
	r := inContainer(t, store, "s1", fmt.Sprintf(`mv /session/workspace /session/ws-old && ln -s %s /session/workspace`, secret))
	require.Equal(t, 0, r.code, r.stderr)
	for _, mounted := range []bool{false, true} {
		if mounted {
			mount(t, store)
		}
		r = inContainer(t, store, "s1", `cat /session/workspace/secret; echo owned > /session/workspace/planted; ls /session/workspace`)
		assert.NotContains(t, r.stdout+r.stderr, hostMarker, "mounted=%v", mounted)
		assertSecretUntouched(t, secret)
		if mounted {
			assert.NotEqual(t, 0, r.code)
			assert.Contains(t, r.stderr, "not a folder of the session")
		}
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
