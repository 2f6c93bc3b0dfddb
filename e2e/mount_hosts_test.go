package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/e2e/apistub"
	sfsmount "github.com/sessionfs/sessionfs/mount"
)

// visibilityBound is what a mount of a shared store adds to the shared filesystem's own delay before another
// host's change shows: its kernel cache's timeout (1 s), with room for a loaded machine.
const visibilityBound = sfsmount.SharedTimeout + time.Second

// seenOnB does change (on host A) and measures how long until host B sees it: directly on B's shared
// filesystem (direct) and through B's sessionfs mount (mounted); it returns the latter and how much later than the
// former it was.
func seenOnB(t *testing.T, change func(), direct, mounted string, done func(os.FileInfo) bool) (took, lag time.Duration) {
	t.Helper()
	start := time.Now()
	change()
	var atDirect, atMount time.Duration
	eventually(t, 30*time.Second, func() bool {
		now := time.Since(start)
		if st, err := os.Stat(direct); atDirect == 0 && err == nil && done(st) {
			atDirect = now
		}
		if st, err := os.Stat(mounted); atMount == 0 && err == nil && done(st) {
			atMount = now
		}
		return atDirect > 0 && atMount > 0
	}, "host B never saw the change at %s", mounted)
	return atMount, max(0, atMount-atDirect)
}

// TestHostsShareOneStore: two hosts (two MooseFS clients of one volume, each with its own sessionfs daemon) serve
// one store. A conversation started through host A resumes through host B with the real claude CLI; a second
// concurrent runner is refused; a killed runner's and a dead host's leases are freed; B sees A's new sessions
// and grown files within the stated bound.
func TestHostsShareOneStore(t *testing.T) {
	claude := claudeBin(t)
	cluster := startMooseFS(t)
	hostA, hostB := cluster.mount(t, "host-a"), cluster.mount(t, "host-b")
	storeA, storeB := filepath.Join(hostA.mnt, "store"), filepath.Join(hostB.mnt, "store")
	ok(t, storeA, "new", "web")
	// The daemons find their store shared, so their kernel caches last 1 s, not 30 (the visibility subtest
	// measures it).
	fstype, shared := sfsmount.SharedStore(storeA)
	require.True(t, shared, "a store on MooseFS (%s) is found shared", fstype)
	assert.Regexp(t, `(?m)^OK\s+sharing\s+the store is on `+regexpQuote(fstype)+`, which other hosts may mount`,
		cli(t, storeA, "doctor").stdout, "doctor says the store is shared")
	mntA, mntB := mount(t, storeA), mount(t, storeB)

	t.Run("visibility", func(t *testing.T) {
		var worst, worstLag [2]time.Duration // a new session, a grown file
		for i := range 5 {
			id := "fresh" + string(rune('a'+i))
			// B looks first, so its kernel holds the name's absence: the case a long cache would serve stale.
			_, err := os.Stat(mntB.session(id))
			require.ErrorIs(t, err, fs.ErrNotExist)
			d, lag := seenOnB(t, func() { require.NoError(t, os.Mkdir(mntA.session(id), 0o755)) },
				filepath.Join(storeB, "sessions", id), mntB.session(id), func(os.FileInfo) bool { return true })
			worst[0], worstLag[0] = max(worst[0], d), max(worstLag[0], lag)

			// A file B has looked at grows through A: B sees the new size.
			rel := filepath.Join(id, "workspace", "log.txt")
			pA := filepath.Join(mntA.mnt, "sessions", rel)
			require.NoError(t, os.WriteFile(pA, []byte("one\n"), 0o644))
			eventually(t, 30*time.Second, func() bool {
				st, err := os.Stat(filepath.Join(mntB.mnt, "sessions", rel))
				return err == nil && st.Size() == 4
			}, "B never saw %s", rel)
			d, lag = seenOnB(t, func() {
				f, err := os.OpenFile(pA, os.O_APPEND|os.O_WRONLY, 0)
				require.NoError(t, err)
				_, err = f.WriteString("two\n")
				require.NoError(t, err)
				require.NoError(t, f.Close())
			}, filepath.Join(storeB, "sessions", rel), filepath.Join(mntB.mnt, "sessions", rel),
				func(st os.FileInfo) bool { return st.Size() == 8 })
			worst[1], worstLag[1] = max(worst[1], d), max(worstLag[1], lag)
		}
		t.Logf("another host's change seen through this host's mount, worst of 5: new session %v (%v after the "+
			"shared filesystem showed it), grown file %v (%v after)", worst[0].Round(time.Millisecond),
			worstLag[0].Round(time.Millisecond), worst[1].Round(time.Millisecond), worstLag[1].Round(time.Millisecond))
		for _, lag := range worstLag {
			assert.Less(t, lag, visibilityBound, "the mount adds at most its kernel cache's %v (and slack)", sfsmount.SharedTimeout)
		}
	})

	t.Run("conversation", func(t *testing.T) {
		api := stub(t, "127.0.0.1:0")
		env := claudeEnv(t, api.URL)
		r := cliIn(t, storeA, "", env, "exec", "web", "--", claude, "-p", "hello from host A")
		require.Equal(t, 0, r.code, "%s%s", r.stdout, r.stderr)
		assert.Contains(t, r.stdout, apistub.Reply)
		canonical := filepath.Join(storeB, "sessions", "web", ".claude", "projects", "-session-workspace")
		files := transcripts(t, canonical)
		require.Len(t, files, 1, "host B's store holds host A's transcript")
		uuid := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
		n := lineCount(t, files[0])

		r = cliIn(t, storeB, "", env, "resume", uuid, "--claude", claude, "--", "-p", "again from host B")
		require.Equal(t, 0, r.code, "%s%s", r.stdout, r.stderr)
		assert.NotContains(t, r.stdout+r.stderr, "No conversation found")
		assert.Contains(t, r.stdout, apistub.Reply)
		require.Len(t, transcripts(t, canonical), 1, "host B continued the same conversation")
		assert.Greater(t, lineCount(t, files[0]), n, "the transcript grew")
		// And host A's mount shows what B wrote.
		eventually(t, visibilityBound, func() bool {
			b, err := os.ReadFile(filepath.Join(mntA.session("web"), ".claude", "projects", "-session-workspace", uuid+".jsonl"))
			return err == nil && strings.Contains(string(b), "again from host B")
		}, "host A's mount never showed host B's turn")
	})

	t.Run("one runner", func(t *testing.T) {
		first := startRunner(t, storeA, nil, "exec", "web", "--", "sh", "-c", holding+"; exec sleep 300")
		waitRefused(t, storeB, first)
		r := cli(t, storeB, "run", "web", "--", "true")
		assert.Equal(t, 125, r.code)
		assert.Regexp(t, refusal, r.stderr)

		// A runner killed on host A frees the lease at once (its descriptor closes with it).
		first.kill()
		start := time.Now()
		eventually(t, 10*time.Second, func() bool { return cli(t, storeB, "exec", "web", "--", "true").code == 0 },
			"host B never got the lease of host A's killed runner")
		t.Logf("a killed runner's lease was free on the other host after %v", time.Since(start).Round(time.Millisecond))
	})

	t.Run("dead host", func(t *testing.T) {
		holder := startRunner(t, storeA, nil, "exec", "web", "--", "sh", "-c", holding+"; exec sleep 600")
		waitRefused(t, storeB, holder)
		// Host A dies: its filesystem client goes without a word; the runner process lingers on a dead mount.
		hostA.kill(t)
		start := time.Now()
		waiter := startRunner(t, storeB, nil, "exec", "--wait", "web", "--", "sh", "-c", "echo ran on B")
		require.True(t, waiter.exited(5*time.Minute), "host B never got the lease of dead host A: %s", waiter.out.String())
		took := time.Since(start)
		assert.Equal(t, 0, waiter.cmd.ProcessState.ExitCode(), waiter.out.String())
		assert.Contains(t, waiter.out.String(), "ran on B")
		t.Logf("a dead host's lease was free after %v (MooseFS expires a silent client's session after 60 s)", took.Round(time.Second))
	})
}
