package local

import (
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// forwarded are the signals relayed to the command while it runs.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// runForwarding runs cmd, passing it the signals this process gets, as a shell does: the command decides what a
// signal means (its SIGINT trap runs to its end, and its exit code is the CLI's). A terminal's Ctrl-C already
// reached the command (the terminal signals the whole foreground process group, which it shares with this
// process), so a SIGINT or SIGQUIT is relayed only when the command would not have had it from a terminal.
func runForwarding(cmd *exec.Cmd) error {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)
	sandbox := cmd.SysProcAttr != nil && cmd.SysProcAttr.Pdeathsig != 0
	if sandbox {
		// The kernel sends the command its parent-death signal when the thread that started it ends: this one
		// stays until the command is gone.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	if sandbox && fromTerminal() {
		defer reclaimTerminal()
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				if (sig == syscall.SIGINT || sig == syscall.SIGQUIT) && fromTerminal() {
					continue
				}
				_ = cmd.Process.Signal(sig)
			}
		}
	}()
	return cmd.Wait()
}

// fromTerminal reports whether this process is in its terminal's foreground process group, where the terminal's
// own signals (Ctrl-C, Ctrl-\) reach every process, the command included.
func fromTerminal() bool {
	pgrp, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}

// reclaimTerminal makes this process's group its terminal's foreground again when a sandboxed run left it to a
// process group that is gone: a shell in the sandbox took the terminal for its jobs (tcsetpgrp), and from its
// PID namespace it cannot name this group to give it back. The caller's next read must not stop it (SIGTTIN).
func reclaimTerminal() {
	pgrp, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	if err != nil || pgrp <= 0 || pgrp == unix.Getpgrp() || unix.Kill(-pgrp, 0) != unix.ESRCH {
		return
	}
	signal.Ignore(syscall.SIGTTOU) // from a background group, tcsetpgrp would stop this process
	defer signal.Reset(syscall.SIGTTOU)
	_ = unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, unix.Getpgrp())
}
