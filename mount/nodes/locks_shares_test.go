package nodes

import (
	"context"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/stretchr/testify/assert"
)

// Each limit holds on its own: a uid in a session, a session over all uids, a uid, the daemon.
func TestSharesBoundSessionUIDAndDaemon(t *testing.T) {
	s := shares{limits: shareLimits{sessionUID: 2, session: 3, uid: 3, total: 6}}
	a1, a2, a9, a7, b2, c8, d4 := payer{"a", 1}, payer{"a2", 1}, payer{"a", 9}, payer{"a", 7}, payer{"b", 2}, payer{"c", 8}, payer{"d", 4}
	assert.True(t, s.take(a1))
	assert.True(t, s.take(a1))
	assert.False(t, s.take(a1), "uid 1 in session a is full")
	assert.True(t, s.take(a9), "another uid in session a has a share of its own")
	assert.False(t, s.take(a7), "session a is full, whatever uid asks")
	assert.True(t, s.take(a2), "uid 1 has room in another session")
	assert.False(t, s.take(a2), "uid 1 is full")
	assert.True(t, s.take(b2), "another uid is not touched")
	assert.True(t, s.take(c8))
	assert.False(t, s.take(d4), "the daemon is full")
	s.give(a1)
	assert.True(t, s.take(d4))
	assert.False(t, s.take(a7), "session a has one free, the daemon none")
	for _, p := range []payer{a1, a9, a2, b2, c8, d4} {
		s.give(p)
	}
	assert.Zero(t, s.total)
	assert.Empty(t, s.byPayer)
	assert.Empty(t, s.bySession)
	assert.Empty(t, s.byUID)
}

// A lock request is charged to its caller's uid, in the session whose file it is.
func TestPayerIsTheCaller(t *testing.T) {
	ctx := fuse.NewContext(context.Background(), &fuse.Caller{Owner: fuse.Owner{Uid: 65534, Gid: 65534}, Pid: 42})
	assert.Equal(t, payer{"vic", 65534}, payerOf(ctx, "vic"))
}
