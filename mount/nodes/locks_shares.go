package nodes

import (
	"context"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// The daemon serves every session, so what a lock costs it (a descriptor for each POSIX lock owner, a polled
// wait for each blocked request) is charged to whoever asks for it: the caller's uid in the session whose file
// it is, that session over all its callers' uids, the caller's uid across sessions, and the whole daemon; and
// the descriptors of one store file to the callers' uids, each apart (maxOwnersPerFile). Each limit is below
// the next: one uid can use up only its own share in a session (a quarter of the session's), then its own
// across sessions; one session can use up only its own share, and it takes four sessions (or four uids) to reach
// the daemon's. Over a share, a request fails with ENOLCK ("no locks available"), which SQLite takes for a busy
// database.
//
// Charged to the caller, not only to the file: sessions are world-readable by default, so another uid may open
// a session's files read-only and read-lock them. Counted against the file's session alone, uid 65534's 512 read
// locks on a session's 0644 files left that session's own processes ENOLCK on files the attacker could not even
// open. Now they fill only (that session, uid 65534): a quarter of the session's share.
//
// And charged to the file's session over all uids: the uid a FUSE request names is the caller's choice for root
// in a container without a user namespace (it setuids to any uid), and across its mapped range for a
// user-namespaced one. Per uid alone, such a container's session took the daemon's every lock through 17 uids.
// A container given one session sees only that session's files, so its session's share bounds it whatever uids
// it takes.
//
// The caller is known by its uid, the one thing the FUSE request names that an unprivileged process cannot
// change at will. Not by its pid: a process forks as many as it likes (each fork a lock owner of its own, so a
// share per pid would be a share per fork), pids are reused once a process ends, and a caller in another pid
// namespace comes with pid 0. Nor by the session it runs in, which the daemon cannot tell: a process is not
// marked with the session it belongs to. The file's session stays in the key so that one uid's processes in one
// session (every session of a user's own mount runs as that user) cannot use up that uid's locks in its other
// sessions.
//
// What remains: callers of the same uid as a session's own processes can still fill (that session, that uid).
// That uid may already write the session's files (and so spoil its database as it likes): it is within what the
// session's owner shares with itself, outside what isolation by uid can keep apart. Four foreign uids (or a
// container root locking through the host's mount, which sees every session) together can fill a
// world-readable session's share. And several sessions acting together (four, each filling its own share) can
// reach the daemon's: only the owners' session shares keep one session from it, not a count of sessions.

// shareLimits bounds one kind of use: per uid in one session (sessionUID), per session over all uids, per uid,
// for the whole daemon.
type shareLimits struct{ sessionUID, session, uid, total int }

var (
	// ownerFileLimits: descriptors held for POSIX lock owners. An owner holds one only while it holds a lock,
	// so a session of 512 processes each holding a lock on one file (SQLite's WAL readers do) fits. One
	// session's worst (2,048), as one uid's, is a quarter of the daemon's.
	ownerFileLimits = shareLimits{sessionUID: 512, session: 2048, uid: 2048, total: 8192}
	// waiterLimits: blocking lock requests waiting at once. One session's or one uid's worst (512) is an
	// eighth of the daemon's.
	waiterLimits = shareLimits{sessionUID: 128, session: 512, uid: 512, total: 4096}
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

// shares counts one kind of use against its limits. Its user guards it (the lock table's mutex, openShares's).
type shares struct {
	limits    shareLimits
	byPayer   map[payer]int
	bySession map[string]int
	byUID     map[uint32]int
	total     int
}

// take charges one to p, unless that would take p (its uid in its session), p's session, p's uid or the daemon
// over its limit.
func (s *shares) take(p payer) bool {
	if s.byPayer == nil {
		s.byPayer, s.bySession, s.byUID = map[payer]int{}, map[string]int{}, map[uint32]int{}
	}
	if s.byPayer[p] >= s.limits.sessionUID || s.bySession[p.session] >= s.limits.session ||
		s.byUID[p.uid] >= s.limits.uid || s.total >= s.limits.total {
		return false
	}
	s.byPayer[p]++
	s.bySession[p.session]++
	s.byUID[p.uid]++
	s.total++
	return true
}

// force charges one to p whatever its limits (an adopted owner's descriptor, whose locks are held already).
func (s *shares) force(p payer) {
	if s.byPayer == nil {
		s.byPayer, s.bySession, s.byUID = map[payer]int{}, map[string]int{}, map[uint32]int{}
	}
	s.byPayer[p]++
	s.bySession[p.session]++
	s.byUID[p.uid]++
	s.total++
}

// give returns one taken by p.
func (s *shares) give(p payer) {
	if s.byPayer[p]--; s.byPayer[p] <= 0 {
		delete(s.byPayer, p)
	}
	if s.bySession[p.session]--; s.bySession[p.session] <= 0 {
		delete(s.bySession, p.session)
	}
	if s.byUID[p.uid]--; s.byUID[p.uid] <= 0 {
		delete(s.byUID, p.uid)
	}
	s.total--
}
