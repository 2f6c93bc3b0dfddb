package nodes

import (
	"context"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// The daemon serves every session, so what a lock costs it (a descriptor for each POSIX lock owner, a polled
// wait for each blocked request) is counted against the session whose file it is and against the caller's uid,
// as well as against the whole daemon. Each limit is below the next: one session can use up only its own share,
// one uid (a session's processes making more sessions through the mount) only its own, and it takes several
// uids in several sessions to reach the daemon's. Over its share, a request fails with ENOLCK ("no locks
// available"), which SQLite reports as an I/O error of its own, not another session's.
//
// The session is the file's, not the caller's: the daemon cannot tell which session a process belongs to. A
// process that may open another session's files may lock them anyway (and hold them locked), so counting its
// locks there gives it no power it did not have.

// shareLimits bounds one kind of use: per session, per uid, for the whole daemon.
type shareLimits struct{ session, uid, total int }

var (
	// ownerFileLimits: descriptors held for POSIX lock owners. An owner holds one only while it holds a lock,
	// so a session of 512 processes each holding a lock on one file (SQLite's WAL readers do) fits.
	ownerFileLimits = shareLimits{session: 512, uid: 2048, total: 8192}
	// waiterLimits: blocking lock requests waiting at once.
	waiterLimits = shareLimits{session: 128, uid: 512, total: 4096}
)

// payer is what a share is charged to.
type payer struct {
	session string
	uid     uint32
}

// payerOf is who pays for a lock request on session's file.
func payerOf(ctx context.Context, session string) payer {
	p := payer{session: session}
	if c, ok := fuse.FromContext(ctx); ok {
		p.uid = c.Uid
	}
	return p
}

// shares counts one kind of use against its limits. The lock table's mutex guards it.
type shares struct {
	limits    shareLimits
	bySession map[string]int
	byUID     map[uint32]int
	total     int
}

// take charges one to p, unless that would take p's session, p's uid or the daemon over its limit.
func (s *shares) take(p payer) bool {
	if s.bySession == nil {
		s.bySession, s.byUID = map[string]int{}, map[uint32]int{}
	}
	if s.bySession[p.session] >= s.limits.session || s.byUID[p.uid] >= s.limits.uid || s.total >= s.limits.total {
		return false
	}
	s.bySession[p.session]++
	s.byUID[p.uid]++
	s.total++
	return true
}

// give returns one taken by p.
func (s *shares) give(p payer) {
	if s.bySession[p.session]--; s.bySession[p.session] <= 0 {
		delete(s.bySession, p.session)
	}
	if s.byUID[p.uid]--; s.byUID[p.uid] <= 0 {
		delete(s.byUID, p.uid)
	}
	s.total--
}
