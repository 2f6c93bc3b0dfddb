package takeover

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/mount/inspect"
)

// The control folder is this user's alone: one another user made, one anyone may enter, or a link (in /tmp a
// normal user's could be planted by another) is refused.
func TestControlDirIsThisUsersAlone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessionfs")
	require.NoError(t, ownDir(dir))
	st, err := os.Lstat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	require.NoError(t, os.Chmod(dir, 0o755))
	assert.ErrorContains(t, ownDir(dir), "not a folder of this user's alone")
	require.NoError(t, os.Chmod(dir, 0o700))
	if os.Geteuid() == 0 { // only root can give a folder away
		require.NoError(t, os.Chown(dir, 65534, 65534))
		assert.ErrorContains(t, ownDir(dir), "not a folder of this user's alone", "another user's")
	}
	require.NoError(t, os.Remove(dir))
	require.NoError(t, os.Symlink(t.TempDir(), dir))
	assert.ErrorContains(t, ownDir(dir), "not a folder of this user's alone", "a link is no folder")
}

// A normal user's control folder is beneath a folder of the user's: its runtime folder when that is the user's,
// else its state folder (XDG_STATE_HOME, else ~/.local/state), never a name in the temporary folder another user
// could make first, unless the user has no such folder.
func TestControlDirIsBeneathTheUsersOwnFolder(t *testing.T) {
	const uid = 65534
	if os.Geteuid() != 0 {
		t.Skip("gives folders to uid 65534: needs root") // the rule is the same for the running user's own
	}
	short := func() string { // t.TempDir's names are long: a socket's name must fit in 108 bytes
		d, err := os.MkdirTemp("/tmp", "sfs-")
		require.NoError(t, err)
		t.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	mine := func() string {
		d := short()
		require.NoError(t, os.Chown(d, uid, uid))
		return d
	}
	home, run, state, others := mine(), mine(), mine(), short()
	t.Setenv("TMPDIR", others)
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", home)
	t.Setenv("XDG_RUNTIME_DIR", run)
	assert.Equal(t, filepath.Join(run, "sessionfs"), controlDirOf(uid), "the runtime folder, the user's")
	assert.Equal(t, "/run/sessionfs", controlDirOf(0), "root's")

	t.Setenv("XDG_RUNTIME_DIR", "")
	assert.Equal(t, filepath.Join(home, ".local/state/sessionfs/run"), controlDirOf(uid), "no runtime folder: ~/.local/state")
	t.Setenv("XDG_RUNTIME_DIR", others)
	assert.Equal(t, filepath.Join(home, ".local/state/sessionfs/run"), controlDirOf(uid), "a runtime folder of another user's is not used")
	t.Setenv("XDG_STATE_HOME", state)
	assert.Equal(t, filepath.Join(state, "sessionfs/run"), controlDirOf(uid), "XDG_STATE_HOME")
	t.Setenv(agents.EnvSession, "s1")
	assert.Equal(t, filepath.Join(home, ".local/state/sessionfs/run"), controlDirOf(uid), "a session's process: its XDG_STATE_HOME is the session's (opencode's)")
	t.Setenv(agents.EnvSession, "")
	t.Setenv("XDG_STATE_HOME", others)
	assert.Equal(t, filepath.Join(home, ".local/state/sessionfs/run"), controlDirOf(uid), "an XDG_STATE_HOME of another user's is not used")

	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", others)
	assert.Equal(t, filepath.Join(others, "sessionfs-65534"), controlDirOf(uid), "no folder of the user's: the temporary folder")
	require.NoError(t, os.Chmod(home, 0o777))
	t.Setenv("HOME", home)
	assert.Equal(t, filepath.Join(others, "sessionfs-65534"), controlDirOf(uid), "a home anyone may write in is not the user's alone")
	require.NoError(t, os.Chmod(home, 0o755))
	deep := filepath.Join(home, strings.Repeat("d", 60))
	require.NoError(t, os.Mkdir(deep, 0o755))
	require.NoError(t, os.Chown(deep, uid, uid))
	t.Setenv("HOME", deep)
	assert.Equal(t, filepath.Join(others, "sessionfs-65534"), controlDirOf(uid), "too deep for a socket's name")
}

// ownDir makes the folders above the control folder 0700, and refuses one in a folder other users may change.
func TestControlDirMadeWithItsParents(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, ".local/state/sessionfs/run")
	require.NoError(t, ownDir(dir))
	for _, d := range []string{dir, filepath.Dir(dir), filepath.Join(base, ".local")} {
		st, err := os.Lstat(d)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), st.Mode().Perm(), d)
	}
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o777))
	assert.ErrorContains(t, ownDir(dir), "in a folder other users may change")
}

// A hand-over's gate lets the requests in flight finish and holds those that come after.
func TestGateFinishesInFlightAndHoldsTheRest(t *testing.T) {
	g := &Gate{}
	g.Enter() // one request in flight
	closed := make(chan bool)
	go func() { closed <- g.Close(time.Minute) }()
	for !gateWaiting(g) { // the hand-over waits for the request in flight
		time.Sleep(time.Millisecond)
	}
	g.Leave()
	assert.True(t, <-closed, "the gate closes once the request in flight finished")
	assert.False(t, g.mu.TryRLock(), "a request that comes after waits (unanswered: it is resent to the next daemon)")
}

// A request that does not finish leaves the gate open past the bound: the hand-over goes on (its request is
// resent).
func TestGateBoundsTheWait(t *testing.T) {
	g := &Gate{}
	g.Enter()
	assert.False(t, g.Close(10*time.Millisecond))
}

// gateWaiting says whether a writer waits for g (a reader can no longer get it).
func gateWaiting(g *Gate) bool {
	if g.mu.TryRLock() {
		g.mu.RUnlock()
		return false
	}
	return true
}

// A daemon that took over serves a handle of the daemon before (below the mark) with one it opens again on the
// node, once, with the request's flags less O_APPEND (a write carries its offset); its own handles pass through.
func TestReopenedServesTheOldDaemonsHandles(t *testing.T) {
	fs := &openRecorder{}
	r := NewReopened(fs)
	r.SetBelow(0) // no mark logged: every handle under the first step was the old daemon's
	in := fuse.WriteIn{InHeader: fuse.InHeader{NodeId: 7}, Fh: 3, Flags: uint32(os.O_WRONLY | os.O_APPEND)}
	for range 2 {
		_, st := r.Write(nil, &in, []byte("x"))
		require.True(t, st.Ok())
	}
	require.Len(t, fs.opens, 1, "opened again once")
	assert.Equal(t, uint64(7), fs.opens[0].NodeId)
	assert.Equal(t, uint32(os.O_WRONLY), fs.opens[0].Flags)
	assert.Equal(t, []uint64{5000, 5000}, fs.written, "served with the handle opened again")
	_, st := r.Write(nil, &fuse.WriteIn{InHeader: fuse.InHeader{NodeId: 7}, Fh: handleStep + 1}, []byte("x"))
	require.True(t, st.Ok())
	assert.Equal(t, uint64(handleStep+1), fs.written[2], "a handle of its own passes through")
	r.Release(nil, &fuse.ReleaseIn{Fh: 3})
	assert.Equal(t, []uint64{5000}, fs.released, "the handle opened again is released with the old one")
	r.Release(nil, &fuse.ReleaseIn{Fh: 4})
	assert.Equal(t, []uint64{5000}, fs.released, "an old handle never used is nothing to release")
}

type openRecorder struct {
	fuse.RawFileSystem
	opens             []fuse.OpenIn
	written, released []uint64
}

func (o *openRecorder) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	o.opens = append(o.opens, *in)
	out.Fh = 5000
	return fuse.OK
}

func (o *openRecorder) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	o.written = append(o.written, in.Fh)
	return uint32(len(data)), fuse.OK
}

func (o *openRecorder) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	o.released = append(o.released, in.Fh)
}

// A state file names its holder by pid and start: a process that took the pid of a holder killed since (another
// user's, whose own mount may have the connection's number since) is not the holder, and sessionfs mount waits for
// no hand-over of it.
func TestHolderIsThereByItsStart(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	start, ok := inspect.StartTicks(cmd.Process.Pid)
	require.True(t, ok)
	assert.True(t, Held{Holder: cmd.Process.Pid, HolderStart: start}.holderIsThere())
	assert.False(t, Held{Holder: cmd.Process.Pid, HolderStart: start - 1}.holderIsThere(), "another process under the holder's pid")
	assert.True(t, Held{Holder: cmd.Process.Pid}.holderIsThere(), "a file of a build before: no start to check")
	self, ok := inspect.StartTicks(os.Getpid())
	require.True(t, ok)
	assert.LessOrEqual(t, self, start, "this process started before its child")
}
