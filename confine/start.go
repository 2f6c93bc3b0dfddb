package confine

import (
	"fmt"
	"os/exec"
	"runtime"
	"slices"

	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/cap"
)

// StartDaemon starts cmd, a root mount's daemon (mount --daemon's detached copy), with the bounding set its
// confinement keeps (Keep and HelperKeep) already: a child takes the bounding set of the thread that forked it,
// and one thread's drops cost some 0.1 ms, where the daemon's own (Bound) stop every one of its threads for each
// of some 35 capabilities, 5 ms or more. Its Bound then finds one left to drop (SETPCAP, which it keeps
// effective for its last drops). With o off, or without the
// SETPCAP the drops need, it is cmd.Start.
func StartDaemon(cmd *exec.Cmd, o Options) error {
	if o.Mode == Off {
		return cmd.Start()
	}
	if on, err := cap.GetProc().GetFlag(cap.Effective, cap.SETPCAP); err != nil || !on {
		return cmd.Start() // the daemon's Bound says why it cannot confine itself
	}
	// SETPCAP too: the daemon drops HelperKeep from its bounding set itself, after its helper started.
	keep := append(append(slices.Clone(Keep), HelperKeep...), cap.SETPCAP)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine, its bounding set shrunk
		for v := cap.Value(0); v < cap.MaxBits(); v++ {
			if slices.Contains(keep, v) {
				continue
			}
			// This thread's alone: the raw call, not libcap's, which makes it on every thread.
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(v), 0, 0, 0); err != nil {
				done <- fmt.Errorf("drop %s from the bounding set: %w", v, err)
				return
			}
		}
		done <- cmd.Start()
	}()
	return <-done
}
