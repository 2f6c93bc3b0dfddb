package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/term"
)

// A root mount run in the foreground at a terminal is served by a copy of this program that can reach no
// terminal: the serving process holds SYS_ADMIN, with which a slip in its code could push input into a terminal
// (TIOCSTI) that the shell then runs as root. The copy runs in a session of its own (no controlling terminal),
// its stdout and stderr one pipe whose lines this process copies to its own stderr, its stdin a pipe that ends
// when this process does. This process passes on the signals it gets (Ctrl-C reaches only it, the copy being in
// another session; SIGHUP, the terminal gone, becomes SIGTERM) and ends as the copy does. A copy is simpler than
// handing the serving process's descriptors over once it is up: it never holds the terminal at all, and the log
// keeps every line, in order. mount --daemon needs none: its copy is detached already (its own session,
// /dev/null in, the log file out).

// relayEnv tells the copy it is relayed: its stdin ending means the relay is gone.
const relayEnv = "SESSIONFS_RELAYED"

// relayedSignals are passed on to the copy.
var relayedSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// reachesTerminal reports whether this process could write to or push into a terminal: one of its descriptors
// 0-2 is one, or it has a controlling terminal (/dev/tty opens).
func reachesTerminal() bool {
	for fd := 0; fd <= 2; fd++ {
		if term.IsTerminal(fd) {
			return true
		}
	}
	tty, err := os.OpenFile("/dev/tty", os.O_RDONLY|syscall.O_NOCTTY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	tty.Close()
	return true
}

// relayMount runs this mount command again as a copy that holds no terminal, and relays its output and the
// signals this process gets until it ends; the result carries its exit status.
func relayMount() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logR, logW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer logR.Close()
	aliveR, aliveW, err := os.Pipe()
	if err != nil {
		logW.Close()
		return err
	}
	defer aliveW.Close() // the copy's stdin ends with this process, however it ends
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, relayedSignals...)
	defer signal.Stop(sigs)
	served := exec.Command(self, os.Args[1:]...)
	served.Env = append(os.Environ(), relayEnv+"=1")
	served.Stdin, served.Stdout, served.Stderr = aliveR, logW, logW
	served.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = served.Start()
	aliveR.Close()
	logW.Close()
	if err != nil {
		return err
	}
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		_, _ = io.Copy(os.Stderr, logR)
		_, _ = io.Copy(io.Discard, logR) // the terminal gone: drained still, so that the mount never waits on its log
	}()
	go func() {
		for s := range sigs {
			if s == syscall.SIGHUP {
				s = syscall.SIGTERM // the terminal is gone, and Ctrl-C with it: unmount cleanly now
			}
			_ = served.Process.Signal(s)
		}
	}()
	err = served.Wait()
	<-relayed // its last lines (the helper's too: it ends with the copy)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return exitCode(128 + int(ws.Signal()))
		}
		return exitCode(exit.ExitCode())
	}
	return err
}

// watchRelay, in a relayed copy, calls gone once its relay has ended (its stdin reaches its end), so that a
// relay killed does not leave a mount that nothing stops.
func watchRelay(gone func()) {
	if os.Getenv(relayEnv) != "1" {
		return
	}
	os.Unsetenv(relayEnv)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		gone()
	}()
}
