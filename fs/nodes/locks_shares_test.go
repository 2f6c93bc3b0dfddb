package nodes

import (
	"context"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/stretchr/testify/assert"
)

// Each limit holds on its own: a uid in a session, a uid, the daemon.
func TestSharesBoundSessionUIDAndDaemon(t *testing.T) {
	s := shares{limits: shareLimits{sessionUID: 2, uid: 3, total: 5}}
	a1, a2, a9, b2, c8 := payer{"a", 1}, payer{"a2", 1}, payer{"a", 9}, payer{"b", 2}, payer{"c", 8}
	assert.True(t, s.take(a1))
	assert.True(t, s.take(a1))
	assert.False(t, s.take(a1), "uid 1 in session a is full")
	assert.True(t, s.take(a9), "another uid in session a has a share of its own")
	assert.True(t, s.take(a2), "uid 1 has room in another session")
	assert.False(t, s.take(a2), "uid 1 is full")
	assert.True(t, s.take(b2), "another uid is not touched")
	assert.False(t, s.take(c8), "the daemon is full")
	s.give(a1)
	assert.True(t, s.take(c8))
	for _, p := range []payer{a1, a9, a2, b2, c8} {
		s.give(p)
	}
	assert.Zero(t, s.total)
	assert.Empty(t, s.byPayer)
	assert.Empty(t, s.byUID)
}

// A lock request is charged to its caller's uid, in the session whose file it is.
func TestPayerIsTheCaller(t *testing.T) {
	ctx := fuse.NewContext(context.Background(), &fuse.Caller{Owner: fuse.Owner{Uid: 65534, Gid: 65534}, Pid: 42})
	assert.Equal(t, payer{"vic", 65534}, payerOf(ctx, "vic"))
}
