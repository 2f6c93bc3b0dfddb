package local

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// A sandboxed command never holds the caller's terminal (as bubblewrap's --new-session, ssh -t and docker run -t):
// in the caller's terminal session, a process of the sandbox could make its group the terminal's foreground
// (tcsetpgrp, allowed to a process that ignores SIGTTOU, or once the shell has taken the terminal back after a
// Ctrl-Z) and read what the user types next into the shell. So when any of its stdin, stdout and stderr is a
// terminal, the command gets a pty of its own, made here before the namespaces, whose slave is its controlling
// terminal (its session's, setsid: runInit) and its fds where those were the terminal; the CLI relays between
// the caller's terminal, raw for the run, and the pty's master. Ctrl-C, Ctrl-Z and Ctrl-\ are bytes the pty's
// line discipline turns into signals for the command's own foreground job; the CLI itself is not suspended.

// drainBound bounds how long the relay waits, once the command has ended, for the output it left in the pty.
const drainBound = 2 * time.Second

// terminalRelay relays between the caller's terminal and the pty of a sandboxed run.
type terminalRelay struct {
	master, slave *os.File
	masterFd      int         // the master's descriptor, for its ioctls (valid until master is closed)
	mu            sync.Mutex  // guards raw and ended: the terminal's modes change on a signal too
	ended         bool        // the relay has ended: the terminal is the caller's again
	in            *os.File    // the caller's stdin when a terminal: relayed to the pty, raw for the run
	out           *os.File    // the caller's terminal the pty's output goes to
	raw           *term.State // the caller's terminal's modes before the run; nil when not made raw
	wake          [2]int      // a pipe whose closing ends the input relay
	inDone        chan struct{}
	outDone       chan struct{}
	sigs          chan os.Signal
}

// isTerminal reports whether v is a file open on a terminal.
func isTerminal(v any) (*os.File, bool) {
	f, ok := v.(*os.File)
	return f, ok && f != nil && term.IsTerminal(int(f.Fd()))
}

// newTerminalRelay makes a pty for a sandboxed run when any of stdin, stdout, stderr is a terminal, and puts its
// slave in their place: nil when none is (the command's stdio stays as it is).
func newTerminalRelay(stdin *io.Reader, stdout, stderr *io.Writer) (*terminalRelay, error) {
	in, inTTY := isTerminal(*stdin)
	out, outTTY := isTerminal(*stdout)
	errf, errTTY := isTerminal(*stderr)
	if !inTTY && !outTTY && !errTTY {
		return nil, nil
	}
	r := &terminalRelay{inDone: make(chan struct{}), outDone: make(chan struct{})}
	switch {
	case outTTY:
		r.out = out
	case errTTY:
		r.out = errf
	default:
		r.out = in
	}
	if inTTY {
		r.in = in
	}
	master, slave, err := openPty()
	if err != nil {
		return nil, fmt.Errorf("--landlock: a terminal of the run's own (/dev/ptmx): %w", err)
	}
	r.master, r.slave = master, slave
	if err := withFd(master, func(fd int) { r.masterFd = fd }); err != nil {
		r.close()
		return nil, err
	}
	// The pty starts as the caller's terminal is: its modes (erase, echo) and its size.
	if t, err := unix.IoctlGetTermios(int(r.out.Fd()), unix.TCGETS); err == nil {
		_ = unix.IoctlSetTermios(int(slave.Fd()), unix.TCSETS, t)
	}
	r.copySize()
	if inTTY {
		*stdin = slave
	}
	if outTTY {
		*stdout = slave
	}
	if errTTY {
		*stderr = slave
	}
	return r, nil
}

// openPty opens a new pty pair, neither end this process's controlling terminal.
func openPty() (master, slave *os.File, err error) {
	// Non-blocking, and never asked for its Fd (which would make it blocking): the poller's deadlines end the relay.
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	master = os.NewFile(uintptr(fd), "/dev/ptmx")
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0)
	}
	if err == nil {
		slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	return master, slave, nil
}

// copySize gives the pty the caller's terminal's window size (the kernel tells the pty's foreground job: SIGWINCH).
func (r *terminalRelay) copySize() {
	if ws, err := unix.IoctlGetWinsize(int(r.out.Fd()), unix.TIOCGWINSZ); err == nil {
		_ = unix.IoctlSetWinsize(r.masterFd, unix.TIOCSWINSZ, ws)
	}
}

// start relays, once the command holds the slave: the caller's terminal is made raw (from the background, the
// kernel stops this process first, as any job that sets its terminal: SIGTTOU), its input goes to the pty, the
// pty's output to it, and its size follows it.
func (r *terminalRelay) start() error {
	r.slave.Close() // the master reads EIO once the sandbox, gone, holds it no more
	if err := unix.Pipe2(r.wake[:], unix.O_CLOEXEC); err != nil {
		return err
	}
	r.sigs = make(chan os.Signal, 4)
	signal.Notify(r.sigs, syscall.SIGWINCH, syscall.SIGTSTP)
	r.makeRaw()
	go r.relayOutput()
	go r.relayInput()
	go r.followSignals()
	return nil
}

func (r *terminalRelay) makeRaw() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.in == nil || r.ended || r.raw != nil {
		return
	}
	if st, err := term.MakeRaw(int(r.in.Fd())); err == nil {
		r.raw = st
	}
}

func (r *terminalRelay) restore() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.raw != nil {
		_ = term.Restore(int(r.in.Fd()), r.raw)
		r.raw = nil
	}
}

// followSignals copies a new window size to the pty; and on a SIGTSTP sent to the CLI (a keyboard's Ctrl-Z is
// the command's now), it gives the terminal its modes back while it is stopped.
func (r *terminalRelay) followSignals() {
	for sig := range r.sigs {
		switch sig {
		case syscall.SIGWINCH:
			r.copySize()
		case syscall.SIGTSTP:
			r.restore()
			_ = unix.Kill(unix.Getpid(), unix.SIGSTOP)
			r.makeRaw()
			r.copySize()
		}
	}
}

// relayOutput copies the pty's output to the caller's terminal until the sandbox has closed the slave (EIO), or
// the relay's end; a terminal that refuses a write loses it, and the command is never blocked on it.
func (r *terminalRelay) relayOutput() {
	defer close(r.outDone)
	buf := make([]byte, 32<<10)
	broken := false
	for {
		n, err := r.master.Read(buf)
		if n > 0 && !broken {
			if _, werr := r.out.Write(buf[:n]); werr != nil {
				broken = true
			}
		}
		if err != nil {
			return
		}
	}
}

// relayInput copies the caller's terminal's input to the pty until the relay ends: it reads only when poll says
// there is input, so that no key typed after the run is taken from the caller's shell.
func (r *terminalRelay) relayInput() {
	defer close(r.inDone)
	if r.in == nil {
		return
	}
	fd := int(r.in.Fd())
	buf := make([]byte, 4096)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(r.wake[0]), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) == 0 {
			continue
		}
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		if n <= 0 || err != nil {
			return // the terminal hung up: its SIGHUP reaches the command through the CLI
		}
		if _, err := r.master.Write(buf[:n]); err != nil {
			return
		}
	}
}

// stop ends the relay once the command has ended: the output it left is shown (within drainBound), and the
// caller's terminal gets its modes back.
func (r *terminalRelay) stop() {
	select {
	case <-r.outDone:
	case <-time.After(drainBound):
		_ = r.master.SetReadDeadline(time.Now())
		<-r.outDone
	}
	unix.Close(r.wake[1])
	_ = r.master.SetWriteDeadline(time.Now())
	<-r.inDone
	signal.Stop(r.sigs)
	close(r.sigs)
	r.mu.Lock()
	r.ended = true // no signal makes it raw again
	r.mu.Unlock()
	r.restore()
	unix.Close(r.wake[0])
	r.master.Close()
}

// withFd runs f with f's descriptor, leaving the file as it is (Fd would make it blocking).
func withFd(f *os.File, do func(fd int)) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) { do(int(fd)) })
}

// close releases a relay that was never started (the command did not start).
func (r *terminalRelay) close() {
	r.slave.Close()
	r.master.Close()
}
