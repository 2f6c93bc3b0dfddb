package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/confine"
	"github.com/sessionfs/sessionfs/e2e/apistub"
)

// TestLandlockedExec: with --landlock, a command exec starts, run as root (DAC checks pass it everywhere), may
// work in its session and read the system, and the kernel refuses it the rest: a root-only file, another
// session (in the store and through the mount), a link it plants to lead out, the store itself, /tmp. Without
// --landlock the same command reaches them, so the test would see a confinement that does nothing. On the store
// itself and through the mount (where the run has a mount namespace of binds).
func TestLandlockedExec(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: the command must be refused what root may otherwise read")
	need(t, confine.ABI() >= 1, "a kernel with Landlock")
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("host secret"), 0o600))
	readable := filepath.Join(t.TempDir(), "tools")
	require.NoError(t, os.Mkdir(readable, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(readable, "tool"), []byte("a tool"), 0o644))

	for _, mounted := range []bool{false, true} {
		name := "on the store"
		if mounted {
			name = "through the mount"
		}
		t.Run(name, func(t *testing.T) {
			store := t.TempDir()
			ok(t, store, "new", "s1")
			ok(t, store, "new", "s2")
			other := filepath.Join(store, "sessions", "s2", "workspace", "f")
			if mounted {
				m := mount(t, store)
				other = filepath.Join(m.mnt, "sessions", "s2", "workspace", "f")
			}
			require.NoError(t, os.WriteFile(other, []byte("another session's"), 0o644))
			sh := func(landlock bool, script string, extra ...string) result {
				args := []string{"exec", "s1"}
				if landlock {
					args = append(append(args, "--landlock"), extra...)
				}
				return cli(t, store, append(args, "--", "sh", "-c", script)...)
			}

			// Unconfined, the command reaches everything root reaches.
			r := sh(false, "cat "+secret+" "+other+"; grep -c '^root:' /etc/shadow")
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, "host secretanother session's1\n", r.stdout)

			// Its own work goes on: files, folders, links, renames, git, its TMPDIR.
			r = sh(true, `set -e; echo x > f; mkdir -p d; mv f d/g; ln -s d/g l; cat l; git init -q repo;
				echo t > "$TMPDIR/t"; cat "$TMPDIR/t"; cat /etc/hostname /etc/passwd > /dev/null; ls /etc > /dev/null; id -un > /dev/null`)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, "x\nt\n", r.stdout)

			// The rest is refused, to root.
			for what, script := range map[string]string{
				"a root-only file":           "cat " + secret,
				"another session":            "cat " + other,
				"a link planted to lead out": "ln -sf " + secret + " out && cat out",
				"the store":                  "ls " + filepath.Join(store, "sessions"),
				"/tmp":                       "echo x > /tmp/sessionfs-landlock-escape",
				"/etc's secrets":             "cat /etc/shadow",
			} {
				r := sh(true, script)
				assert.NotEqual(t, 0, r.code, "%s: %s", what, r.stdout)
				assert.Contains(t, r.stderr, "Permission denied", what)
				assert.NotContains(t, r.stdout, "host secret", what)
			}
			assert.NoFileExists(t, "/tmp/sessionfs-landlock-escape")

			// What the user allows, it may read.
			r = sh(true, "cat "+filepath.Join(readable, "tool"), "--allow-read", readable)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, "a tool", r.stdout)
		})
	}
}

// TestLandlockedClaude: the real claude CLI works under --landlock through the mount, offline against the stub:
// its state is the session's, the rest it does not need.
func TestLandlockedClaude(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: the mount's binds")
	need(t, confine.ABI() >= 1, "a kernel with Landlock")
	forEachClaude(t, func(t *testing.T, c claudeCLI) {
		api := stub(t, "127.0.0.1:0")
		store := t.TempDir()
		ok(t, store, "new", "s1")
		mount(t, store)
		cmd := exec.Command(bin, "exec", "s1", "--landlock", "--", c.path, "-p", "hello under landlock")
		cmd.Env = append(claudeEnv(t, api.URL), "SESSIONFS_STORE="+store)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), apistub.Reply)
		r := cli(t, store, "show", "s1", "--json")
		assert.Contains(t, r.stdout, "hello under landlock", "the conversation is the session's")
	})
}
