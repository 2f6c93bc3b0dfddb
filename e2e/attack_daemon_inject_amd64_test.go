package e2e

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// canInject: injectIoctl works on this architecture.
const canInject = true

// injectIoctl makes a thread of process pid call ioctl(fd, req, &arg) itself, as a slip in its own code would:
// under its own seccomp filter, Landlock and capabilities. It stops one thread with ptrace (PTRACE_SEIZE and
// PTRACE_INTERRUPT: the other threads run on), points it at the system call instruction it stopped after, with
// the call's registers and arg written below its stack pointer, steps it over that one instruction, and puts back
// its registers and memory as they were, so that the call it was making (a futex wait, a read of /dev/fuse)
// goes on. It returns the call's errno (0: it succeeded).
func injectIoctl(pid, fd int, req uint64, arg []byte) (syscall.Errno, error) {
	if len(arg) > 8 {
		return 0, errors.New("an argument of at most 8 bytes")
	}
	runtime.LockOSThread() // ptrace answers only the thread that attached
	defer runtime.UnlockOSThread()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		errno, done, err := injectInto(tid, fd, req, arg)
		if err != nil || done {
			return errno, err
		}
	}
	return 0, fmt.Errorf("no thread of %d stopped just after a system call instruction", pid)
}

// injectInto is injectIoctl on thread tid; done is false when the thread was not stopped just after a system call
// instruction (it is then left as it was).
func injectInto(tid, fd int, req uint64, arg []byte) (errno syscall.Errno, done bool, err error) {
	if err := unix.PtraceSeize(tid); err != nil {
		return 0, false, fmt.Errorf("ptrace seize %d: %w", tid, err)
	}
	defer unix.PtraceDetach(tid)
	if err := unix.PtraceInterrupt(tid); err != nil {
		return 0, false, fmt.Errorf("ptrace interrupt %d: %w", tid, err)
	}
	// Until the interrupt's stop: a signal that arrives first (the Go runtime's SIGURG) is delivered.
	for {
		var ws unix.WaitStatus
		if _, err := unix.Wait4(tid, &ws, unix.WALL, nil); err != nil {
			return 0, false, fmt.Errorf("wait for %d: %w", tid, err)
		}
		if !ws.Stopped() {
			return 0, false, fmt.Errorf("thread %d ended", tid)
		}
		if ws.StopSignal() == unix.SIGTRAP && ws.TrapCause() == unix.PTRACE_EVENT_STOP {
			break
		}
		if err := unix.PtraceCont(tid, int(ws.StopSignal())); err != nil {
			return 0, false, err
		}
	}
	var saved unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &saved); err != nil {
		return 0, false, err
	}
	insn := make([]byte, 2)
	if _, err := unix.PtracePeekText(tid, uintptr(saved.Rip-2), insn); err != nil || insn[0] != 0x0f || insn[1] != 0x05 {
		return 0, false, nil // not just after a syscall instruction
	}
	// arg goes below the stack pointer, past the red zone, in memory the thread's stack owns.
	at := uintptr(saved.Rsp-256) &^ 7
	word := make([]byte, 8)
	if _, err := unix.PtracePeekData(tid, at, word); err != nil {
		return 0, false, err
	}
	data := append([]byte(nil), word...)
	copy(data, arg)
	if _, err := unix.PtracePokeData(tid, at, data); err != nil {
		return 0, false, err
	}
	defer unix.PtracePokeData(tid, at, word)
	regs := saved
	regs.Rip -= 2 // the syscall instruction
	regs.Rax, regs.Rdi, regs.Rsi, regs.Rdx = unix.SYS_IOCTL, uint64(fd), req, uint64(at)
	regs.Orig_rax = ^uint64(0) // no call to restart: the kernel leaves these registers be as it resumes the thread
	if err := unix.PtraceSetRegs(tid, &regs); err != nil {
		return 0, false, err
	}
	// Restored whatever happens now: the call the thread was in is then restarted or returns, as it would have.
	defer unix.PtraceSetRegs(tid, &saved)
	if err := unix.PtraceSingleStep(tid); err != nil {
		return 0, false, err
	}
	for {
		var ws unix.WaitStatus
		if _, err := unix.Wait4(tid, &ws, unix.WALL, nil); err != nil {
			return 0, false, err
		}
		if !ws.Stopped() {
			return 0, false, fmt.Errorf("thread %d ended", tid)
		}
		if ws.StopSignal() == unix.SIGTRAP {
			break
		}
		// Another signal first (SIGURG): dropped, so that no handler runs on the borrowed registers; the Go
		// runtime asks again.
		if err := unix.PtraceSingleStep(tid); err != nil {
			return 0, false, err
		}
	}
	if err := unix.PtraceGetRegs(tid, &regs); err != nil {
		return 0, false, err
	}
	if regs.Rip != saved.Rip {
		return 0, false, fmt.Errorf("thread %d stepped to %#x, not past the system call at %#x", tid, regs.Rip, saved.Rip-2)
	}
	if r := int64(regs.Rax); r < 0 {
		return syscall.Errno(-r), true, nil
	}
	return 0, true, nil
}
