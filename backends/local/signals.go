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
// reached a command in the CLI's process group (the terminal signals the whole foreground group), so a SIGINT or
// SIGQUIT is relayed to it only when it would not have had it from a terminal; a sandbox, in a session of its own
// (its keys go through relay, its pty), gets them all. relay (nil: none) starts once the command holds its pty.
func runForwarding(cmd *exec.Cmd, relay *terminalRelay) error {
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
	if err := cmd.Start(); err != nil {
		if relay != nil {
			relay.close()
		}
		return err
	}
	if relay != nil {
		if err := relay.start(); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			relay.close()
			return err
		}
		defer relay.stop()
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				if (sig == syscall.SIGINT || sig == syscall.SIGQUIT) && !sandbox && fromTerminal() {
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
