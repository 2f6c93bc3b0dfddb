package mount

import (
	"fmt"
	"net/rpc"
	"os"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// A request that killed one daemon must not kill every daemon after it (issue 49). The kernel resends what a dead
// daemon had read to the daemon that takes over; a request that kills whoever serves it (a session's file that
// takes the daemon past its cgroup's MemoryMax, a crash) would be resent into the same death, daemon after daemon,
// and its caller and every user of the mount would wait for good. So a daemon that took over tells its holder of
// each resent request before it serves it and once it answered it (resendGuard, go-fuse's ResendGuard); when the
// daemon dies with one of them unanswered, the holder tells the daemon after it, which answers that request EIO.
// A request is served by at most two daemons: the one it was sent to, and the one it was resent to. The holder's
// other bound, maxFailedTakeovers, counts daemons that die before they serve, which such a daemon may not be.

// maxFatal bounds the requests the holder remembers as fatal (the oldest are forgotten: each was answered EIO by
// then, or its caller is gone).
const maxFatal = 256

// ResendingArgs is a resent request a daemon is about to serve.
type ResendingArgs struct {
	Unique uint64
	Opcode uint32
}

// Resending: the daemon serves resent request args.Unique now.
func (s *helperService) Resending(args ResendingArgs, _ *struct{}) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.resending == nil {
		s.resending = map[uint64]uint32{}
	}
	if len(s.resending) < maxFatal {
		s.resending[args.Unique] = args.Opcode
	}
	return nil
}

// Resent: the daemon answered resent request unique.
func (s *helperService) Resent(unique uint64, _ *struct{}) error {
	s.mu.Lock()
	delete(s.resending, unique)
	s.mu.Unlock()
	return nil
}

// noteFatal, once the daemon died (not handed over), keeps the resent requests it had not answered as fatal, for
// the daemon after it (takeoverConfig.Fatal), and says so in the log.
func (s *helperService) noteFatal() map[uint64]uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	for unique, op := range s.resending {
		fmt.Fprintf(os.Stderr, "sessionfs: daemon %d died serving request %d (%s), which the daemon before it had read when it died too: the next daemon answers it EIO, not serving it again\n",
			s.daemon, unique, fuse.OpcodeName(op))
		if len(s.fatal) >= maxFatal {
			clear(s.fatal)
		}
		if s.fatal == nil {
			s.fatal = map[uint64]uint32{}
		}
		s.fatal[unique] = op
	}
	clear(s.resending)
	return s.fatal
}

// resendGuard is go-fuse's ResendGuard of a daemon that took the connection over (see above).
type resendGuard struct {
	helper *rpc.Client
	fatal  map[uint64]uint32 // read only: the resent requests a daemon died serving
}

func (g resendGuard) Admit(unique uint64, opcode uint32) fuse.Status {
	if _, ok := g.fatal[unique]; ok {
		fmt.Fprintf(os.Stderr, "sessionfs: request %d (%s), resent, killed the daemons it was sent to: answered EIO\n", unique, fuse.OpcodeName(opcode))
		return fuse.EIO
	}
	// Told before it is served: a holder gone (an error here) ends the mount anyway.
	_ = g.helper.Call("Helper.Resending", ResendingArgs{Unique: unique, Opcode: opcode}, nil)
	return fuse.OK
}

func (g resendGuard) Done(unique uint64) { _ = g.helper.Call("Helper.Resent", unique, nil) }
