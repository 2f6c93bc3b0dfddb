package confine

import (
	"errors"
	"fmt"
	"runtime"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// ErrNoLandlock: the kernel has no Landlock (it needs Linux 5.13, and landlock in the lsm= boot list).
var ErrNoLandlock = errors.New("the kernel has no Landlock (Linux 5.13 and landlock in the lsm= boot list)")

// Beneath runs fn on a thread of its own that Landlock confines to the folders open as dirs: from that thread
// nothing else may be opened for reading or writing, made, removed or renamed, whatever path it is given or a
// link leads it to. It is for code that opens files by name (SQLite, which even turns /proc/self/fd/N into the
// path it stands for) in a folder other processes may change: a session's, whose processes can put a link where
// a name was checked a moment before. fn must do its work on its own goroutine. The thread ends with fn.
func Beneath(fn func() error, dirs ...int) error {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return ErrNoLandlock
	}
	handled := uint64(ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSReadDir |
		ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg |
		ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock | ll.AccessFSMakeSym)
	if abi >= 2 {
		handled |= ll.AccessFSRefer
	}
	if abi >= 3 {
		handled |= ll.AccessFSTruncate
	}
	// Files read, written, made, truncated and removed beneath dirs (a database, its log and journal): no
	// folder, link, device, FIFO or socket made, nothing run.
	allowed := handled & (ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSReadDir | ll.AccessFSRemoveFile |
		ll.AccessFSMakeReg | ll.AccessFSTruncate)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine, confined as it is
		done <- func() error {
			rs, err := ll.LandlockCreateRuleset(&ll.RulesetAttr{HandledAccessFS: handled}, 0)
			if err != nil {
				return fmt.Errorf("landlock: %w", err)
			}
			defer unix.Close(rs)
			for _, dir := range dirs {
				if err := ll.LandlockAddPathBeneathRule(rs, &ll.PathBeneathAttr{AllowedAccess: allowed, ParentFd: dir}, 0); err != nil {
					return fmt.Errorf("landlock: %w", err)
				}
			}
			// no_new_privs and the restriction are this thread's alone (raw calls, not the all-threads ones).
			if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
				return fmt.Errorf("no_new_privs: %w", err)
			}
			if err := ll.LandlockRestrictSelf(rs, 0); err != nil {
				return fmt.Errorf("landlock: %w", err)
			}
			return fn()
		}()
	}()
	return <-done
}
