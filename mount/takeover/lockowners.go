package takeover

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/internal/selfexec"
	"github.com/sessionfs/sessionfs/mount/nodes"
)

// POSIX locks held through the mount outlive its daemon (mount/nodes/locks_kept.go says how). The
// daemon and its holder share a SEQPACKET socket (the holder's and a taking-over daemon's descriptor 6): the
// daemon sends each lock owner's descriptor (SCM_RIGHTS) before the owner's first lock is taken, and says when it
// closed one; the holder keeps the copies, and gives them to each daemon that takes over, which adopts them
// before it serves. A message sent is the holder's even if the daemon is killed the instant after: the kernel
// keeps the descriptor in the socket until the holder reads it.
//
// The holder takes nothing from sessions: only descriptors the (confined) daemon gives it, at most
// maxHeldLockOwners, as many as the daemon's own lock table ever holds (nodes' ownerFileLimits). Past it the
// holder closes what it is sent, and says so: those owners' locks are held until the daemon dies, as before.

// LocksFD is the holder's, and a taking-over daemon's, descriptor of the socket of lock owners.
const LocksFD = 6

// The daemon says which owners' descriptors it closed with its next "keep", or once dropBatch of them are: a
// lock and an unlock are one message, not two. A copy the holder keeps a while longer holds nothing (the daemon
// unlocked it before it closed its own), and a daemon that dies first leaves them to the next, which drops what
// holds nothing (nodes.AdoptLockOwners).
const dropBatch = 64

// maxHeldLockOwners bounds the owners' descriptors a holder keeps: the daemon's lock table's own bound, and the
// closed ones it has not been told of yet.
const maxHeldLockOwners = 8192 + dropBatch

// lockMsg is one message on the socket: "keep" (with the descriptor), "drop", "adopt" (with the descriptor, from
// the holder) and "end" (the holder gave all it keeps). Dropped: the owners' descriptors the daemon closed.
type lockMsg struct {
	Op      string
	Owner   nodes.KeptOwner `json:",omitzero"`
	Dropped []uint64        `json:",omitempty"`
}

// keepWait bounds the wait for room in the holder's socket (it reads it every readPause); a holder that takes
// nothing for so long (stopped, or starved) is not waited for again for keepRest: the owners' locks are taken all
// the same, and go with this daemon. Lock requests wait on the lock table meanwhile: never for good.
const (
	keepWait = time.Second
	keepRest = 5 * time.Second
)

// handToNext makes the socket of the daemon about to take over, gives it every owner kept on it (handTo) and
// returns its end, to pass.
func (h *heldLocks) handToNext() (*os.File, error) {
	daemon, holder, err := lockSocketPair()
	if err != nil {
		return nil, err
	}
	h.handTo(holder)
	return os.NewFile(uintptr(daemon), "sessionfs-locks"), nil
}

// lockSocketPair makes the two ends of a socket of lock owners: the daemon's and the holder's.
func lockSocketPair() (daemon, holder int, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, -1, fmt.Errorf("make the socket to keep the mount's locks: %w", err)
	}
	for _, fd := range fds { // room for a burst of a lock-heavy session between two reads (root's may pass wmem_max)
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, lockSocketRoom) != nil {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, lockSocketRoom)
		}
	}
	return fds[0], fds[1], nil
}

// sendLockMsg sends m, with descriptor fd (-1: none), on socket sock, waiting for room.
func sendLockMsg(sock int, m lockMsg, fd int) error {
	return sendLockMsgWithin(sock, m, fd, -1)
}

// sendLockMsgWithin sends m, with descriptor fd (-1: none), on socket sock, waiting for room up to wait (<0: for
// good); errHolderSlow once that is past.
func sendLockMsgWithin(sock int, m lockMsg, fd int, wait time.Duration) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	var rights []byte
	if fd >= 0 {
		rights = unix.UnixRights(fd)
	}
	deadline := time.Now().Add(wait)
	for {
		err = unix.Sendmsg(sock, b, rights, nil, unix.MSG_NOSIGNAL|unix.MSG_DONTWAIT)
		if err != unix.EINTR && err != unix.EAGAIN {
			return err
		}
		if err == unix.EAGAIN {
			timeout := -1
			if wait >= 0 {
				left := time.Until(deadline)
				if left <= 0 {
					return errHolderSlow
				}
				timeout = int(left/time.Millisecond) + 1
			}
			_, _ = unix.Poll([]unix.PollFd{{Fd: int32(sock), Events: unix.POLLOUT}}, timeout)
		}
	}
}

// closeAll closes the descriptors received with a message not taken.
func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// heldOwner is an owner's descriptor the holder keeps.
type heldOwner struct {
	Owner nodes.KeptOwner
	FD    int
}

// heldLocks is the holder's table of the owners' descriptors, and its end of the serving daemon's socket.
type heldLocks struct {
	mu      sync.Mutex
	owners  map[uint64]heldOwner
	sock    int    // the serving daemon's socket (-1: none)
	gen     uint64 // counts the sockets: a reader of one detached ends
	limit   int
	refused int // descriptors closed at the limit
}

func newHeldLocks() *heldLocks {
	return &heldLocks{owners: map[uint64]heldOwner{}, sock: -1, limit: maxHeldLockOwners}
}

// attach reads the owners' descriptors a daemon sends on sock from now on.
func (h *heldLocks) attach(sock int) {
	h.mu.Lock()
	h.gen++
	h.sock = sock
	gen := h.gen
	h.mu.Unlock()
	go h.read(sock, gen)
}

// read applies what the daemon sends on sock, until the socket ends or is detached; it closes sock.
func (h *heldLocks) read(sock int, gen uint64) {
	for {
		pfd := []unix.PollFd{{Fd: int32(sock), Events: unix.POLLIN}}
		_, err := unix.Poll(pfd, -1)
		h.mu.Lock()
		ended := h.gen != gen || err != nil && err != unix.EINTR || h.drain(sock)
		if ended {
			if h.gen == gen {
				h.sock = -1
			}
			unix.Close(sock)
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
		// What is sent waits in the socket meanwhile, its descriptors the kernel's: the holder wakes once for
		// many messages of a lock-heavy session, not once for each, and leaves the CPU to the daemon.
		time.Sleep(readPause)
	}
}

// readPause is the pause of the holder's reader between two reads: at a lock and an unlock each 20 us, some 50
// messages; lockSocketRoom is the socket's room, some 2,700 of them (some 280 at the kernel's default).
const (
	readPause      = time.Millisecond
	lockSocketRoom = 1 << 20
)

// detach takes in what the daemon gone sent and has not been read, and ends its socket (the reader closes it).
func (h *heldLocks) detach() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sock < 0 {
		return
	}
	h.drain(h.sock)
	_ = unix.Shutdown(h.sock, unix.SHUT_RDWR) // wakes the reader, which closes it
	h.sock = -1
	h.gen++
}

// drain applies the messages waiting on sock (h.mu held); true once it ended.
func (h *heldLocks) drain(sock int) bool {
	buf, oob := make([]byte, 4096), make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(sock, buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
		if err == unix.EAGAIN || err == unix.EINTR {
			return false
		}
		if err != nil || n == 0 && oobn == 0 {
			return true
		}
		h.apply(buf[:n], selfexec.ReceivedFDs(oob[:oobn]))
	}
}

// apply keeps or drops an owner's descriptor as a message says (h.mu held). What is not a message of the two is
// ignored, its descriptors closed.
func (h *heldLocks) apply(b []byte, fds []int) {
	var m lockMsg
	if json.Unmarshal(b, &m) != nil {
		closeAll(fds)
		return
	}
	if m.Op == "keep" || m.Op == "drop" {
		for _, id := range m.Dropped {
			if old, ok := h.owners[id]; ok {
				unix.Close(old.FD)
				delete(h.owners, id)
			}
		}
	}
	switch {
	case m.Op == "keep" && len(fds) == 1 && m.Owner.ID != 0:
		if old, ok := h.owners[m.Owner.ID]; ok {
			unix.Close(old.FD)
		} else if len(h.owners) >= h.limit {
			unix.Close(fds[0])
			if h.refused++; h.refused == 1 {
				fmt.Fprintf(os.Stderr, "sessionfs: the holder keeps %d lock owners' descriptors, its most: the locks of the owners after them are lost when the daemon dies\n", h.limit)
			}
			return
		}
		h.owners[m.Owner.ID] = heldOwner{Owner: m.Owner, FD: fds[0]}
	case m.Op == "drop" && len(fds) == 0:
	default:
		closeAll(fds)
	}
}

// handTo gives a daemon taking over, on its new socket sock, every owner's descriptor kept, then "end", and
// reads what it sends from then on.
func (h *heldLocks) handTo(sock int) {
	h.detach() // what the daemon gone sent, all of it
	h.mu.Lock()
	kept := make([]heldOwner, 0, len(h.owners))
	for _, o := range h.owners {
		kept = append(kept, o)
	}
	h.mu.Unlock()
	// On a descriptor of its own: the reader closes sock when the daemon dies, and its number may be another's.
	dup, err := unix.FcntlInt(uintptr(sock), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sessionfs: the holder cannot give the daemon taking over its lock owners: %v\n", err)
		h.attach(sock)
		return
	}
	go func() {
		defer unix.Close(dup)
		for _, o := range kept {
			if sendLockMsg(dup, lockMsg{Op: "adopt", Owner: o.Owner}, o.FD) != nil {
				return // the daemon is gone
			}
		}
		_ = sendLockMsg(dup, lockMsg{Op: "end"}, -1)
	}()
	h.attach(sock)
}

// held is the table, for a holder executing a new binary: each descriptor open across the exec.
func (h *heldLocks) held() []heldOwner {
	h.detach() // what the daemon gone sent, all of it
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]heldOwner, 0, len(h.owners))
	for _, o := range h.owners {
		out = append(out, o)
	}
	return out
}

// restore takes the table a holder before this binary kept.
func (h *heldLocks) restore(owners []heldOwner) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, o := range owners {
		unix.CloseOnExec(o.FD)
		h.owners[o.Owner.ID] = o
	}
}

// IsSocket says whether descriptor fd is open on a socket.
func IsSocket(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFSOCK
}
