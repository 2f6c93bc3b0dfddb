package nodes

import (
	"context"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// The daemon serves every session, so what a lock costs it (a descriptor for each POSIX lock owner, a polled
// wait for each blocked request) is charged to whoever asks for it: the caller's uid in the session whose file
// it is, the caller's uid across sessions, and the whole daemon; and the descriptors of one store file to the
// callers' uids, each apart (maxOwnersPerFile). Each limit is below the next: one uid can use up only its own
// share in a session, then its own across sessions, and it takes four uids to reach the daemon's. Over a share,
// a request fails with ENOLCK ("no locks available"), which SQLite takes for a busy database.
//
// Charged to the caller, not to the file: sessions are world-readable by default, so another uid may open a
// session's files read-only and read-lock them. Counted against the file's session, as they were before, uid
// 65534's 512 read locks on a session's 0644 files left that session's own processes ENOLCK on files the
// attacker could not even open. Now they fill only (that session, uid 65534).
//
// The caller is known by its uid, the one thing the FUSE request names that a process cannot change at will.
// Not by its pid: a process forks as many as it likes (each fork a lock owner of its own, so a share per pid
// would be a share per fork), pids are reused once a process ends, and a caller in another pid namespace comes
// with pid 0. Nor by its session, which the daemon cannot tell: a process is not marked with the session it
// belongs to. The file's session stays in the key so that one uid's processes in one session (every session of a
// user's own mount runs as that user) cannot use up that uid's locks in its other sessions.
//
// What remains: callers of the same uid as a session's own processes can still fill (that session, that uid).
// That uid may already write the session's files (and so spoil its database as it likes): it is within what the
// session's owner shares with itself, outside what isolation by uid can keep apart.

// shareLimits bounds one kind of use: per uid in one session (sessionUID), per uid, for the whole daemon.
type shareLimits struct{ sessionUID, uid, total int }

var (
	// ownerFileLimits: descriptors held for POSIX lock owners. An owner holds one only while it holds a lock,
	// so a session of 512 processes each holding a lock on one file (SQLite's WAL readers do) fits. One uid's
	// worst (2,048) is a quarter of the daemon's.
	ownerFileLimits = shareLimits{sessionUID: 512, uid: 2048, total: 8192}
	// waiterLimits: blocking lock requests waiting at once. One uid's worst (512) is an eighth of the daemon's.
	waiterLimits = shareLimits{sessionUID: 128, uid: 512, total: 4096}
)

// payer is what a share is charged to: the caller's uid in the session whose file it asks for.
type payer struct {
	session string
	uid     uint32
}

// payerOf is who pays for the caller's lock request on session's file.
func payerOf(ctx context.Context, session string) payer {
	p := payer{session: session}
	if c, ok := fuse.FromContext(ctx); ok {
		p.uid = c.Uid
	}
	return p
}

// shares counts one kind of use against its limits. The lock table's mutex guards it.
type shares struct {
	limits  shareLimits
	byPayer map[payer]int
	byUID   map[uint32]int
	total   int
}

// take charges one to p, unless that would take p (its uid in its session), p's uid or the daemon over its
// limit.
func (s *shares) take(p payer) bool {
	if s.byPayer == nil {
		s.byPayer, s.byUID = map[payer]int{}, map[uint32]int{}
	}
	if s.byPayer[p] >= s.limits.sessionUID || s.byUID[p.uid] >= s.limits.uid || s.total >= s.limits.total {
		return false
	}
	s.byPayer[p]++
	s.byUID[p.uid]++
	s.total++
	return true
}

// give returns one taken by p.
func (s *shares) give(p payer) {
	if s.byPayer[p]--; s.byPayer[p] <= 0 {
		delete(s.byPayer, p)
	}
	if s.byUID[p.uid]--; s.byUID[p.uid] <= 0 {
		delete(s.byUID, p.uid)
	}
	s.total--
}
