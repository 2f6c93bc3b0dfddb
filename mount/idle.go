package mount

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/cap"
)

// The helper is a second start of this binary: some 45 ms of CPU for the Go runtime and package init, at the
// moment the daemon confines itself. Each step of the confinement stops every thread of the daemon and waits
// for each to run, and with the helper's start-up taking both cores, that took 5-8 ms a step instead of 0.2. So
// the helper starts in the idle scheduling class (it runs when the daemon does not). The daemon takes it out just
// before its own last steps (wakeHelper), and the helper takes out any thread it made meanwhile once it is up
// (leaveIdleClass): an idle process on a machine whose cores are busy would wait seconds for its start.

// startIdle starts cmd in the idle scheduling class: from a thread of this process put there for the fork, and
// put back after.
func startIdle(cmd *exec.Cmd) error {
	// Leaving the idle class needs SYS_NICE (in a container without it, the thread and the helper would stay
	// there): without it, started as usual.
	if on, err := cap.GetProc().GetFlag(cap.Effective, cap.SYS_NICE); err != nil || !on {
		return cmd.Start()
	}
	runtime.LockOSThread()
	idle := &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}
	if unix.SchedSetAttr(0, idle, 0) != nil {
		runtime.UnlockOSThread()
		return cmd.Start() // not allowed here: started as usual
	}
	err := cmd.Start()
	if unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}, 0) == nil {
		runtime.UnlockOSThread()
	} // else the thread stays locked, and ends with this goroutine's end: no idle thread serves requests
	return err
}

// wakeHelper takes the threads the helper (pid) has so far out of the idle class, from the daemon while it still holds
// SYS_NICE (confine.Serving's last step before the capabilities go): the helper's start-up then competes only with
// the daemon's last confinement steps, not with whatever keeps a busy machine's cores full. A thread it makes
// later from one still idle is moved by leaveIdleClass.
func wakeHelper(pid int) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return
	}
	normal := &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}
	for _, t := range tasks {
		if tid, err := strconv.Atoi(t.Name()); err == nil {
			_ = unix.SchedSetAttr(tid, normal, 0)
		}
	}
}

// leaveIdleClass takes every thread of the helper out of the idle scheduling class it was started in (it holds
// SYS_NICE for this): its binds must not wait for every other process of a busy machine.
func leaveIdleClass() {
	var param struct{ priority int32 }
	_, _, _ = syscall.AllThreadsSyscall(unix.SYS_SCHED_SETSCHEDULER, 0, unix.SCHED_NORMAL, uintptr(unsafe.Pointer(&param)))
}
