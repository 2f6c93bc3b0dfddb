package remote

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/layout"
)

// machine is a store with session s1, standing for one machine that syncs with the bucket.
type machine struct {
	t     *testing.T
	store *layout.Store
	ws    string // the session's workspace
}

func newMachine(t *testing.T) *machine {
	st, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	_, err = st.Create("s1", layout.CreateOptions{})
	require.NoError(t, err)
	return &machine{t: t, store: st, ws: filepath.Join(st.Dir("s1"), "workspace")}
}

// sync syncs the machine's s1 with the test bucket.
func (m *machine) sync(opt Options) (Report, error) {
	r, err := OpenS3(context.Background(), "s3://"+testBucket+"/sync", "s1")
	require.NoError(m.t, err)
	defer r.Close()
	return Sync(context.Background(), m.store, "s1", r, opt)
}

func (m *machine) syncOK(opt Options) Report {
	rep, err := m.sync(opt)
	require.NoError(m.t, err)
	return rep
}

func (m *machine) write(rel, data string, mtime time.Time) {
	p := filepath.Join(m.ws, rel)
	require.NoError(m.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(m.t, os.WriteFile(p, []byte(data), 0o644))
	require.NoError(m.t, os.Chtimes(p, mtime, mtime))
}

func (m *machine) read(rel string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(m.ws, rel))
	return string(b), err == nil
}

// A file removed on a side that had it is removed on the other; a file only one side ever had is never taken
// for a removal on the other.
func TestSyncPropagatesDeletions(t *testing.T) {
	startS3(t)
	a, b := newMachine(t), newMachine(t)
	now := time.Now()
	a.write("gone.txt", "x\n", now)
	a.write("kept.txt", "y\n", now)
	a.syncOK(Options{})
	b.syncOK(Options{})
	_, ok := b.read("gone.txt")
	require.True(t, ok)
	b.write("only-b.txt", "b\n", now)
	require.NoError(t, os.Remove(filepath.Join(b.ws, "gone.txt")))
	rep := b.syncOK(Options{})
	assert.Equal(t, 1, rep.RemovedThere)
	rep = a.syncOK(Options{})
	assert.Equal(t, 1, rep.RemovedHere)
	_, ok = a.read("gone.txt")
	assert.False(t, ok, "removed on A too")
	got, _ := a.read("only-b.txt")
	assert.Equal(t, "b\n", got)
	got, _ = a.read("kept.txt")
	assert.Equal(t, "y\n", got)
}

// A file both sides changed (not a conversation) keeps the newer at its name and the other beside it, on both
// sides; the same bytes on both are no conflict.
func TestSyncKeepsBothOnConflict(t *testing.T) {
	startS3(t)
	a, b := newMachine(t), newMachine(t)
	t0 := time.Now().Add(-time.Hour)
	a.write("notes.md", "v0\n", t0)
	a.write("same.md", "v0\n", t0)
	a.syncOK(Options{})
	b.syncOK(Options{})
	a.write("notes.md", "from A\n", t0.Add(time.Minute))
	b.write("notes.md", "from B, later\n", t0.Add(2*time.Minute))
	a.write("same.md", "both\n", t0.Add(time.Minute))
	b.write("same.md", "both\n", t0.Add(3*time.Minute))
	a.syncOK(Options{Label: "L"})
	rep := b.syncOK(Options{Label: "L"})
	assert.Equal(t, 1, rep.Conflicts, "notes.md only: same.md holds the same bytes")
	a.syncOK(Options{Label: "L"})
	for _, m := range []*machine{a, b} {
		got, _ := m.read("notes.md")
		assert.Equal(t, "from B, later\n", got, "the newer at its name")
		got, _ = m.read("notes.md.sessionfs-conflict-L")
		assert.Equal(t, "from A\n", got, "the other beside it")
		got, _ = m.read("same.md")
		assert.Equal(t, "both\n", got)
		_, ok := m.read("same.md.sessionfs-conflict-L")
		assert.False(t, ok)
	}
}

// A dry run lists what would move and moves nothing; a one-way sync leaves a file changed on both sides alone.
func TestSyncDryRunAndOneWay(t *testing.T) {
	startS3(t)
	a, b := newMachine(t), newMachine(t)
	a.write("a.txt", "a\n", time.Now())
	rep := a.syncOK(Options{DryRun: true})
	assert.Contains(t, strings.Join(rep.Plan, "\n"), "push workspace/a.txt (2 B)")
	rep = b.syncOK(Options{})
	assert.Equal(t, 0, rep.Pulled, "the dry run sent nothing")
	a.syncOK(Options{})
	b.syncOK(Options{})
	a.write("a.txt", "changed on A\n", time.Now().Add(time.Minute))
	b.write("a.txt", "changed on B\n", time.Now().Add(2*time.Minute))
	a.syncOK(Options{Direction: Push})
	rep = b.syncOK(Options{Direction: Pull})
	assert.Equal(t, 1, rep.Waiting, "changed on both sides: left for a sync both ways")
	got, _ := b.read("a.txt")
	assert.Equal(t, "changed on B\n", got)
}

// The agents' credentials never leave unless asked for; links and FIFOs of the session are not sent, and the
// sync does not block on a FIFO.
func TestSyncLeavesCredentialsLinksAndFIFOs(t *testing.T) {
	startS3(t)
	a, b := newMachine(t), newMachine(t)
	cred := filepath.Join(a.store.Dir("s1"), ".claude", ".credentials.json")
	require.NoError(t, os.WriteFile(cred, []byte(`{"token":"secret"}`), 0o600))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(a.ws, "passwd")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(a.ws, "fifo"), 0o644))
	done := make(chan struct{})
	go func() { a.syncOK(Options{}); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the sync blocked")
	}
	b.syncOK(Options{})
	_, err := os.Lstat(filepath.Join(b.store.Dir("s1"), ".claude", ".credentials.json"))
	assert.True(t, os.IsNotExist(err), "credentials stay where they are")
	for _, name := range []string{"passwd", "fifo"} {
		_, err := os.Lstat(filepath.Join(b.ws, name))
		assert.True(t, os.IsNotExist(err), name)
	}
	a.syncOK(Options{WithCredentials: true})
	b.syncOK(Options{WithCredentials: true})
	got, err := os.ReadFile(filepath.Join(b.store.Dir("s1"), ".claude", ".credentials.json"))
	require.NoError(t, err)
	assert.Equal(t, `{"token":"secret"}`, string(got), "with --with-credentials")
}

// A conversation both sides appended to is joined: the same bytes on both, every line once.
func TestSyncJoinsConversations(t *testing.T) {
	startS3(t)
	a, b := newMachine(t), newMachine(t)
	rel := filepath.Join(a.store.Dir("s1"), ".claude", "projects", "-session-workspace", "c.jsonl")
	line := func(uuid, parent string, sec int) string {
		return `{"parentUuid":"` + parent + `","uuid":"` + uuid + `","timestamp":"2026-12-03T10:00:0` + string(rune('0'+sec)) + `Z"}` + "\n"
	}
	require.NoError(t, os.MkdirAll(filepath.Dir(rel), 0o755))
	require.NoError(t, os.WriteFile(rel, []byte(line("u1", "", 1)), 0o600))
	a.syncOK(Options{})
	b.syncOK(Options{})
	relB := filepath.Join(b.store.Dir("s1"), ".claude", "projects", "-session-workspace", "c.jsonl")
	appendTo := func(p, s string) {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		f.WriteString(s)
		f.Close()
	}
	appendTo(rel, line("a2", "u1", 2))
	appendTo(relB, line("b3", "u1", 3))
	a.syncOK(Options{})
	rep := b.syncOK(Options{})
	assert.Equal(t, 1, rep.Joined)
	a.syncOK(Options{})
	ga, _ := os.ReadFile(rel)
	gb, _ := os.ReadFile(relB)
	assert.Equal(t, string(ga), string(gb))
	assert.Equal(t, line("u1", "", 1)+line("a2", "u1", 2)+line("b3", "a2", 3), string(ga), "B's turn follows A's")
}
