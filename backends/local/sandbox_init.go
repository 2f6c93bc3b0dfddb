package local

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/sessionfs/sessionfs/confine"
	"github.com/sessionfs/sessionfs/internal/selfexec"
)

// A run with Landlock has a PID namespace of its own too (nsAttr), and its helper is that namespace's init (pid
// 1): once it has shaped the mount namespace (sandboxMounts) it starts the command as its child, through
// selfexec.Confine (the sessionfs binary again, which restricts itself and execs the command), relays to it the
// signals it is sent, reaps what the sandbox leaves, and exits with the command's status as soon as the command
// ends. Then the kernel kills whatever else the sandbox started: nothing of it outlives the run (a process that
// ignored SIGHUP and waited for the shell to take its terminal back took it over again, and read what the user
// typed next). The init itself holds no rule: it runs no code of the command's, the command may neither signal
// nor trace it (Landlock's scopes), and it has no terminal (a session of its own, made by the CLI: nsAttr).

// selfexec.Confine, as the first argument, makes the sessionfs binary the confinement stage of a run with Landlock:
// started by the run's init in the namespaces it shaped, it restricts itself as confine.CommandEnv says and execs
// the command ("--", then the command, its first word already resolved).

// initSignals are the signals the init relays to the command: those the CLI relays (signals.go) and any other a
// user may send the init itself. The pty's own (Ctrl-C, Ctrl-Z, a resize) reach the command without it.
var initSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1,
	syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGCONT, syscall.SIGTSTP}

// runInit runs argv confined, as the child of this process (the init of the run's PID namespace), and returns
// its exit code: the command's own, 128+signal when a signal ended it (as a shell says).
func runInit(argv []string) (int, error) {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, initSignals...) // before the child: none is lost
	// /proc/self/exe is this very binary (the run's own /proc shows this process), whatever its path shows now.
	// The command runs in a session of its own (the init's, made by the CLI, has no terminal): a terminal on its
	// stdio is the run's own pty (pty.go), made its controlling one; no terminal of the caller's is reachable.
	sys := &syscall.SysProcAttr{Setsid: true}
	for fd := range 3 {
		if term.IsTerminal(fd) {
			sys.Setctty, sys.Ctty = true, fd
			break
		}
	}
	child, err := os.StartProcess("/proc/self/exe", append([]string{os.Args[0], selfexec.Confine, "--"}, argv...),
		&os.ProcAttr{Env: os.Environ(), Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}, Sys: sys})
	if err != nil {
		return helperExit, fmt.Errorf("--landlock: start the command: %w", err)
	}
	go func() {
		for sig := range sigs {
			_ = child.Signal(sig) // by pidfd: never another process, once the command is gone
		}
	}()
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return helperExit, fmt.Errorf("--landlock: wait for the command: %w", err)
		}
		if pid != child.Pid {
			continue // a process of the sandbox whose parent ended: reaped
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ws.ExitStatus(), nil
	}
}

// confined is the confinement stage: argv ("--", then the command) run confined, in place of this process.
func confined(args []string) error {
	if len(args) < 2 || args[0] != "--" {
		return errors.New("internal: bad helper arguments")
	}
	return confine.ExecFromEnv(args[1:])
}
