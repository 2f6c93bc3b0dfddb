package nodes

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

// Every file open through the mount holds a descriptor of the store's file in the daemon until the kernel
// releases it (FUSE passthrough serves reads and writes from it), and the daemon has one table of descriptors
// for every session. So each open is charged, as a lock is (locks_shares.go), to the caller's uid in the file's
// session, to the file's session whoever opens it (root in a container picks its uid freely), to the caller's
// uid across sessions, and to all callers together; the shares are fractions of the daemon's RLIMIT_NOFILE, and
// all callers together never take more than half of it: the rest is the daemon's own (the store's folders, the
// watcher, new sessions, listings, lock owners' descriptors).
//
// Past a share the open fails with EMFILE ("too many open files"), not ENFILE: the caller's own open files
// through the mount are what fills its share, and closing them is what frees it, which is what EMFILE tells a
// program (a server backs off and closes idle files, a shell reports the command's failure); ENFILE claims
// the whole system is out, which no program of the caller can remedy.

// openLimitsFor sizes the shares of store descriptors held for callers' opens from the daemon's descriptor
// limit: one session's worst (an eighth) or one uid's (an eighth) leaves all callers together room for three
// more as bad, and the daemon half its table.
func openLimitsFor(nofile int) shareLimits {
	return shareLimits{sessionUID: nofile / 16, session: nofile / 8, uid: nofile / 8, total: nofile / 2}
}

// openShares counts the store descriptors held for callers' opens: the shares locks are counted with
// (locks_shares.go), under a mutex of their own (an open holds no lock table).
type openShares struct {
	mu sync.Mutex
	shares
}

// take charges one open to p, unless that would take one of its shares over its limit.
func (s *openShares) take(p payer) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shares.take(p)
}

// give returns one open taken by p.
func (s *openShares) give(p payer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shares.give(p)
}

// held is how many opens p holds now (for tests).
func (s *openShares) held(p payer) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byPayer[p]
}

var (
	// opens are the daemon's shares of descriptors: one table per process, whatever mounts it serves.
	opens     openShares
	opensSize sync.Once
)

// RaiseFileLimit raises the process's descriptor limit, as root, to the kernel's most (fs.nr_open, at most
// 1<<20), so that the callers' shares are large, and sizes the shares from the limit then. Call it at start,
// before serving; without it the shares are sized from the limit at the first open.
func RaiseFileLimit() {
	opensSize.Do(func() {
		var lim unix.Rlimit
		if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) != nil {
			lim = unix.Rlimit{Cur: 1024, Max: 1024}
		}
		if most := nrOpen(); most > lim.Max && unix.Geteuid() == 0 {
			// prlimit, not syscall.Setrlimit: where Go raised the soft limit at start, the programs it starts
			// still get back the one they would have had.
			raised := unix.Rlimit{Cur: most, Max: most}
			if unix.Prlimit(0, unix.RLIMIT_NOFILE, &raised, nil) == nil {
				lim = raised
			}
		}
		opens.limits = openLimitsFor(int(min(lim.Cur, 1<<30)))
	})
}

// nrOpen is the kernel's limit on a process's descriptors, at most 1<<20; 0 if unknown.
func nrOpen() uint64 {
	var buf [32]byte
	fd, err := unix.Open("/proc/sys/fs/nr_open", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	n, err := unix.Read(fd, buf[:])
	if err != nil {
		return 0
	}
	var v uint64
	for _, c := range buf[:n] {
		if c < '0' || c > '9' {
			break
		}
		v = v*10 + uint64(c-'0')
	}
	return min(v, 1<<20)
}

// takeOpen charges an open of a file of session to the caller, or says EMFILE past its share.
func takeOpen(ctx context.Context, session string) (payer, syscall.Errno) {
	RaiseFileLimit() // sized once
	p := payerOf(ctx, session)
	if !opens.take(p) {
		return p, syscall.EMFILE
	}
	return p, 0
}

// heldFile is a store file open through the mount, charged to its opener until the kernel releases it. It is
// a LoopbackFile (the kernel's passthrough and the lock table take its descriptor).
type heldFile struct {
	*fs.LoopbackFile
	payer payer
	given atomic.Bool
}

var (
	_ = (fs.FileReleaser)((*heldFile)(nil))
	_ = (fs.FilePassthroughFder)((*heldFile)(nil))
)

// newHeldFile makes the handle of fd, opened for p's charge.
func newHeldFile(fd int, p payer) *heldFile {
	return &heldFile{LoopbackFile: fs.NewLoopbackFile(fd).(*fs.LoopbackFile), payer: p}
}

// Release closes the store file and gives its charge back (once).
func (h *heldFile) Release(ctx context.Context) syscall.Errno {
	errno := h.LoopbackFile.Release(ctx)
	if !h.given.Swap(true) {
		opens.give(h.payer)
	}
	return errno
}
