package nodes

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One uid fills its share in a session, then its share across sessions; a session's callers together fill the
// session's; all together never the daemon's reserve; what is given back can be taken again.
func TestOpenSharesBoundEachCaller(t *testing.T) {
	s := openShares{shares: shares{limits: openLimitsFor(160)}} // 10 per uid in a session, 20 a session, 20 a uid, 80 in all
	assert.Equal(t, shareLimits{sessionUID: 10, session: 20, uid: 20, total: 80}, s.limits)
	fill := func(p payer) int {
		n := 0
		for s.take(p) {
			n++
		}
		return n
	}
	a1, a2, a3 := payer{"a", 65534}, payer{"b", 65534}, payer{"c", 65534}
	assert.Equal(t, 10, fill(a1), "uid 65534 in session a")
	assert.Equal(t, 10, fill(a2), "uid 65534 in session b")
	assert.Equal(t, 0, fill(a3), "uid 65534 past its share across sessions")
	assert.Equal(t, 10, fill(payer{"c", 1000}), "another uid in another session")
	assert.Equal(t, 10, fill(payer{"a", 0}), "root in session a, beside uid 65534")
	assert.Equal(t, 0, fill(payer{"a", 1}), "a third uid in the full session a")
	for uid := uint32(2); uid < 100; uid++ {
		fill(payer{"d" + string(rune('a'+uid%26)), uid})
	}
	assert.Equal(t, 80, s.total, "all callers together")
	assert.Equal(t, 10, s.held(a1))
	s.give(a1)
	assert.Equal(t, 9, s.held(a1))
	assert.True(t, s.take(a1), "a share given back is taken again")
}

// A file opened through Open is charged to its opener until released, once, and past the share the open says
// EMFILE; the handle still gives the kernel its descriptor for passthrough.
func TestOpensChargedUntilRelease(t *testing.T) {
	RaiseFileLimit()
	saved := opens.limits
	opens.limits = shareLimits{sessionUID: 2, session: 4, uid: 4, total: 8}
	t.Cleanup(func() { opens.limits = saved })
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(p, nil, 0o644))
	ctx := &fuse.Context{Caller: fuse.Caller{Owner: fuse.Owner{Uid: 4242}}}
	open := func() (fs.FileHandle, syscall.Errno) {
		payer, errno := takeOpen(ctx, "s")
		if errno != 0 {
			return nil, errno
		}
		fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		require.NoError(t, err)
		return newHeldFile(fd, payer), 0
	}
	f1, errno := open()
	require.Zero(t, errno)
	f2, errno := open()
	require.Zero(t, errno)
	_, errno = open()
	assert.Equal(t, syscall.EMFILE, errno, "past the share")
	_, ok := f1.(fs.FilePassthroughFder).PassthroughFd()
	assert.True(t, ok, "the kernel's passthrough takes the handle's descriptor")
	watched := &Tree{}
	watched.SetWatch(nopWatch{})
	w := watched.writer("f", f2.(*heldFile)) // a writer, followed by the cache
	_, ok = w.(fs.FilePassthroughFder).PassthroughFd()
	assert.True(t, ok, "the kernel's passthrough takes the writer's descriptor")
	assert.Zero(t, f1.(fs.FileReleaser).Release(context.Background()))
	_ = f1.(fs.FileReleaser).Release(context.Background()) // a second release gives nothing back twice
	assert.Equal(t, 1, opens.held(payer{"s", 4242}))
	assert.Zero(t, w.(fs.FileReleaser).Release(context.Background()))
	assert.Equal(t, 0, opens.held(payer{"s", 4242}), "released files cost nothing")
}

// nopWatch watches nothing.
type nopWatch struct{}

func (nopWatch) Add(string) error    { return nil }
func (nopWatch) Remove(string) error { return nil }
