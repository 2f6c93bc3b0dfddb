package docker

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/agents/codex"
	"github.com/sessionfs/sessionfs/backends"
	"github.com/sessionfs/sessionfs/layout"
)

// session lays out a session folder as Claude leaves it (its transcript 0600) and opens it.
func session(t *testing.T) (string, *layout.Dir) {
	t.Helper()
	dir := t.TempDir()
	canonical := filepath.Join(dir, ".claude", "projects", "-session-workspace")
	require.NoError(t, os.MkdirAll(canonical, 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "workspace"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(canonical, "c.jsonl"), []byte("{}\n"), 0o600))
	d, err := layout.OpenDir(dir)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return dir, d
}

func TestCannotUseNamesWhatTheUserCannotWrite(t *testing.T) {
	dir, sess := session(t)
	me := account{host: uint32(os.Geteuid()), gid: uint32(os.Getegid())}
	stranger := account{spec: "agent", uid: 4242, host: 4242, gid: 4242}

	denied, err := cannotUse(sess, me, claude.Agent)
	require.NoError(t, err)
	assert.NoError(t, denied, "the owner can")
	denied, err = cannotUse(sess, stranger, nil)
	require.NoError(t, err)
	assert.NoError(t, denied, "a command that is no agent's is not judged")

	denied, err = cannotUse(sess, stranger, claude.Agent)
	require.NoError(t, err)
	require.Error(t, denied)
	assert.Contains(t, denied.Error(), "write workspace in the session")

	// Open to all but the transcript, which Claude keeps 0600: that is what a stranger could not carry on.
	for _, p := range []string{"workspace", ".claude", ".claude/projects", ".claude/projects/-session-workspace"} {
		require.NoError(t, os.Chmod(filepath.Join(dir, p), 0o777))
	}
	denied, err = cannotUse(sess, stranger, claude.Agent)
	require.NoError(t, err)
	require.Error(t, denied)
	assert.Contains(t, denied.Error(), "write .claude/projects/-session-workspace/c.jsonl in the session")
	assert.Contains(t, denied.Error(), "mode 0600")

	// A group the stranger is in, as its supplementary groups say.
	require.NoError(t, os.Chmod(filepath.Join(dir, ".claude/projects/-session-workspace/c.jsonl"), 0o660))
	var st unix.Stat_t
	require.NoError(t, unix.Stat(dir, &st))
	stranger.groups = []uint32{st.Gid}
	denied, err = cannotUse(sess, stranger, claude.Agent)
	require.NoError(t, err)
	assert.NoError(t, denied)

	// A link the session planted is never followed: it names nothing the agent records in.
	require.NoError(t, os.Symlink("/etc", filepath.Join(dir, ".claude/projects/-session-workspace/out")))
	denied, err = cannotUse(sess, stranger, claude.Agent)
	require.NoError(t, err)
	assert.NoError(t, denied)

	// Root of a rootful engine overrides the modes.
	denied, err = cannotUse(sess, account{override: true, host: 0}, claude.Agent)
	require.NoError(t, err)
	assert.NoError(t, denied)
}

func TestRunAgentIsTheCommands(t *testing.T) {
	assert.Equal(t, claude.Agent, runAgent(backends.Spec{Argv: []string{"/usr/local/bin/claude", "-p", "hi"}}))
	assert.Equal(t, codex.Agent, runAgent(backends.Spec{Agent: "codex", Argv: []string{"codex", "exec", "hi"}}))
	assert.Nil(t, runAgent(backends.Spec{Agent: "claude", Argv: []string{"sh"}}), "every run names an agent: its command tells")
	assert.Nil(t, runAgent(backends.Spec{Argv: []string{"sh", "-c", "claude"}}))
	assert.Nil(t, runAgent(backends.Spec{}))
}

func TestAllowedFollowsTheKernelsOrder(t *testing.T) {
	st := &unix.Stat_t{Uid: 10, Gid: 20, Mode: unix.S_IFREG | 0o046}
	assert.False(t, allowed(st, account{host: 10, gid: 99}, 4), "the owner's bits, not the others'")
	assert.True(t, allowed(st, account{host: 11, gid: 20}, 4))
	assert.False(t, allowed(st, account{host: 11, gid: 20}, 2), "the group's bits, not the others'")
	assert.True(t, allowed(st, account{host: 11, gid: 21}, 6))
	assert.True(t, allowed(st, account{host: noID, gid: noID, override: true}, 7))
}

func TestNamesAccountOnlyWhenTheImageMustSay(t *testing.T) {
	for spec, want := range map[string]bool{"": false, "0:0": false, "1001:1001": false, "1000": true, "agent": true, "agent:agent": true, "1000:staff": true} {
		assert.Equal(t, want, namesAccount(spec), "%q", spec)
	}
}
