package takeover

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// The lock owners a holder keeps go to the binary it executes (holder_exec.go) or to the helper a holder moved to
// starts (holder_move.go) with the rest of upgradedState, in an environment string; the kernel takes at most
// 128 KiB in one (MAX_ARG_STRLEN), about 1,200 owners, and a session's processes may hold more: a uid's share is
// 2,048, the daemon's 8,192. Past that the exec failed (E2BIG), so that a session holding many locks refused
// every upgrade, and a CSI plugin's update lost the node's mount. So many owners go in a memory file instead,
// named by its descriptor; a few stay inline, as every build before read them.

// inlineLocksMost is the most the owners' list takes inline: as many as builds before pass to the new binary
// (which reads no memory file), with room in the string for the rest of the state (under 1 KiB).
const inlineLocksMost = 112 << 10

// carryLocks puts locks in st: inline, or in a memory file st names by its descriptor here (returned, close-on-exec:
// the caller passes it on, and closes it once the new binary runs or failed to).
func (st *upgradedState) carryLocks(locks []heldOwner) (*os.File, error) {
	b, err := json.Marshal(locks)
	if err != nil {
		return nil, err
	}
	if len(b) <= inlineLocksMost {
		st.Locks = locks
		return nil, nil
	}
	fd, err := unix.MemfdCreate("sessionfs-locks", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("make the file of the lock owners kept: %w", err)
	}
	f := os.NewFile(uintptr(fd), "sessionfs-locks")
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, fmt.Errorf("write the lock owners kept: %w", err)
	}
	st.LocksFile = fd
	return f, nil
}

// lockOwners are the owners st carries, read from its memory file (which it closes) if it names one.
func (st *upgradedState) lockOwners() ([]heldOwner, error) {
	if st.LocksFile <= 0 {
		return st.Locks, nil
	}
	f := os.NewFile(uintptr(st.LocksFile), "sessionfs-locks")
	defer f.Close()
	// Each owner's entry is short (about 120 bytes): this bounds what is read from a descriptor gone wrong.
	b, err := io.ReadAll(io.NewSectionReader(f, 0, maxHeldLockOwners<<10))
	if err != nil {
		return nil, fmt.Errorf("read the lock owners the holder before kept: %w", err)
	}
	var locks []heldOwner
	if err := json.Unmarshal(b, &locks); err != nil {
		return nil, fmt.Errorf("read the lock owners the holder before kept: %w", err)
	}
	return append(st.Locks, locks...), nil
}
