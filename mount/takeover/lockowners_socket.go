package takeover

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/internal/selfexec"
	"github.com/sessionfs/sessionfs/mount/nodes"
)

// The daemon's end of the lock owners' socket (lockowners.go): it keeps each lock owner's descriptor with the
// holder as the tree makes one, and a daemon taking over adopts those the holder kept.

// LockSocket is the daemon's end: it keeps its lock owners' descriptors with the holder (nodes.LockKeeper).
type LockSocket struct {
	mu        sync.Mutex
	fd        int
	broken    bool      // the holder is gone: said once, not asked again
	slowUntil time.Time // the holder took nothing for keepWait: not waited for again till then
	dropped   []uint64  // closed, not said yet
}

// NewLockSocket makes the socket to a holder: this daemon's end, and the holder's (to pass it, then close).
func NewLockSocket() (*LockSocket, int, error) {
	daemon, holder, err := lockSocketPair()
	if err != nil {
		return nil, -1, err
	}
	return &LockSocket{fd: daemon}, holder, nil
}

// TakenLockSocket is a taking-over daemon's socket to its holder (nil: not given one).
func TakenLockSocket() *LockSocket {
	if !IsSocket(LocksFD) {
		return nil
	}
	unix.CloseOnExec(LocksFD)
	return &LockSocket{fd: LocksFD}
}

// Close closes the daemon's end (a start-up that failed).
func (k *LockSocket) Close() { unix.Close(k.fd) }

// errHolderSlow: the holder took nothing for keepWait.
var errHolderSlow = errors.New("the holder took no message for a second")

// maxPendingDrops bounds the closes not told yet while the holder is slow: past it they are not told (the
// holder's copies hold nothing, and the next daemon drops them).
const maxPendingDrops = 4 * dropBatch

func (k *LockSocket) send(m lockMsg, fd int) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.broken {
		k.dropped = k.dropped[:0] // nobody to tell
		return errHolderGone
	}
	if time.Now().Before(k.slowUntil) {
		return errHolderSlow
	}
	m.Dropped = k.dropped
	err := sendLockMsgWithin(k.fd, m, fd, keepWait)
	switch {
	case err == nil:
		k.dropped = k.dropped[:0]
	case errors.Is(err, errHolderSlow):
		k.slowUntil = time.Now().Add(keepRest)
		fmt.Fprintf(os.Stderr, "sessionfs: the holder took no lock owner's descriptor for %s: the POSIX locks taken in the next %s go with this daemon\n", keepWait, keepRest)
	default:
		k.broken = true
		fmt.Fprintf(os.Stderr, "sessionfs: the holder keeps no more lock owners' descriptors (%v): POSIX locks taken from now on go with this daemon\n", err)
	}
	return err
}

// errHolderGone: the socket to the holder failed once; nothing more is sent on it.
var errHolderGone = errors.New("the holder is gone")

// Keep sends owner o's descriptor to the holder, and the owners closed since the last message.
func (k *LockSocket) Keep(o nodes.KeptOwner, fd int) error {
	return k.send(lockMsg{Op: "keep", Owner: o}, fd)
}

// Drop tells the holder that owner id's descriptor is closed: with the next message, or now once dropBatch wait.
func (k *LockSocket) Drop(id uint64) {
	k.mu.Lock()
	if len(k.dropped) < maxPendingDrops {
		k.dropped = append(k.dropped, id)
	}
	full := len(k.dropped) >= dropBatch
	k.mu.Unlock()
	if full {
		_ = k.send(lockMsg{Op: "drop"}, -1)
	}
}

// adoptWait bounds the wait for the holder's table: it sends it at once, so only a holder gone makes it last.
const adoptWait = 5 * time.Second

// received reads the owners' descriptors the holder gives a daemon taking over, up to its "end".
func (k *LockSocket) Received() ([]nodes.KeptOwner, []int, error) {
	var owners []nodes.KeptOwner
	var fds []int
	buf, oob := make([]byte, 4096), make([]byte, unix.CmsgSpace(4*4))
	deadline := time.Now().Add(adoptWait)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return owners, fds, errors.New("the holder did not give its lock owners in time")
		}
		pfd := []unix.PollFd{{Fd: int32(k.fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(pfd, int(left/time.Millisecond)+1); err != nil && err != unix.EINTR {
			return owners, fds, err
		}
		n, oobn, _, _, err := unix.Recvmsg(k.fd, buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return owners, fds, fmt.Errorf("the holder's socket ended before its lock owners: %v", err)
		}
		var m lockMsg
		got := selfexec.ReceivedFDs(oob[:oobn])
		if json.Unmarshal(buf[:n], &m) != nil || m.Op == "adopt" && len(got) != 1 || m.Op != "adopt" && len(got) != 0 {
			closeAll(got)
			continue
		}
		switch m.Op {
		case "adopt":
			owners, fds = append(owners, m.Owner), append(fds, got[0])
		case "end":
			return owners, fds, nil
		}
	}
}
