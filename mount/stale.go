package mount

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/moby/sys/mountinfo"

	"github.com/sessionfs/sessionfs/mount/inspect"
)

// probeTimeout bounds how long a mount may take to answer statfs before it is judged hung.
const probeTimeout = 2 * time.Second

var errHung = errors.New("the mount does not answer")

// probe asks the mount's daemon for statfs, which the kernel never answers from a cache. A dead daemon gives
// ENOTCONN; a daemon that died holding a file on its own mount leaves the connection up with nobody serving it,
// and the call hangs: that is reported as errHung after probeTimeout (the stuck call ends when the connection is
// aborted).
func probe(mnt string) error {
	done := make(chan error, 1)
	go func() {
		var st syscall.Statfs_t
		done <- syscall.Statfs(mnt, &st)
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(probeTimeout):
		return errHung
	}
}

// Stale reports whether mnt is a FUSE mount whose daemon is gone or hung.
func Stale(mnt string) bool { return isStale(probe(mnt)) }

func isStale(probed error) bool {
	return errors.Is(probed, syscall.ENOTCONN) || errors.Is(probed, syscall.ECONNABORTED) || errors.Is(probed, errHung)
}

// abortConnection aborts the FUSE connection of the mount at mnt through the fusectl filesystem, which ends
// every request waiting on it. It is how a hung mount is cleared.
func abortConnection(mnt string) error {
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(mnt))
	if err != nil || len(mounts) == 0 {
		return fmt.Errorf("%s is not in the mount table", mnt)
	}
	return inspect.Abort(uint32(mounts[0].Minor))
}
