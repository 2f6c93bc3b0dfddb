// Package selfexec names the roles the sessionfs binary runs in when it starts itself, and starts a process of it
// linked to its parent. A role is argv[1], one name scheme for all (__sessionfs-<role>); main hands each to the
// function that runs it, and any other program that shows it (ps, /proc) is told by it, never trusted for it.
package selfexec

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"

	"golang.org/x/sys/unix"
)

// The roles.
const (
	// Helper: a confined mount's privileged helper; with a held mount, its holder (packages mount, mount/takeover).
	Helper = "__sessionfs-helper"
	// Takeover: a daemon a holder starts to take a mount's connection over.
	Takeover = "__sessionfs-takeover"
	// Nsexec: a run's binds in its mount namespace, then the command (backends/local).
	Nsexec = "__sessionfs-nsexec"
	// Landlock: a run with Landlock, in namespaces of its own (backends/local).
	Landlock = "__sessionfs-landlock"
	// Confine: the confinement stage of a run with Landlock, started by its init (backends/local).
	Confine = "__sessionfs-confine"
)

// The names a build before this scheme gives its holder and the daemons it starts. A holder keeps its argv across
// an upgrade (a build before re-executes itself as this one with its own names), so these are roles too.
const (
	helperBefore   = "__privileged"
	takeoverBefore = "__takeover"
)

// Is says whether argv[1] of args is role (or the name a build before gives it).
func Is(args []string, role string) bool {
	if len(args) < 2 {
		return false
	}
	return args[1] == role || slices.Contains(Before(role), args[1])
}

// Before is what a build before names role, if it names it otherwise.
func Before(role string) []string {
	switch role {
	case Helper:
		return []string{helperBefore}
	case Takeover:
		return []string{takeoverBefore}
	}
	return nil
}

// LinkedFD is a linked process's end of its socket to its parent (StartLinked).
const LinkedFD = 3

// StartLinked starts cmd with start, its end of a socket pair as descriptor LinkedFD and extra as 4, 5, ..., and
// returns this end and its pid; cmd is reaped whenever it ends.
func StartLinked(cmd *exec.Cmd, start func(*exec.Cmd) error, extra ...*os.File) (net.Conn, int, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, 0, err
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "sessionfs-parent"), os.NewFile(uintptr(fds[1]), "sessionfs-child")
	defer theirs.Close()
	cmd.ExtraFiles = append([]*os.File{theirs}, extra...)
	if err := start(cmd); err != nil {
		ours.Close()
		return nil, 0, err
	}
	go func() { _ = cmd.Wait() }()
	conn, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		_ = cmd.Process.Kill()
		return nil, 0, err
	}
	return conn, cmd.Process.Pid, nil
}

// The variables that carry a role's configuration (JSON) from the process that starts it.
const (
	HelperEnv   = "SESSIONFS_HELPER"   // the helper's (package mount)
	TakeoverEnv = "SESSIONFS_TAKEOVER" // a taking-over daemon's (mount/takeover.DaemonConfig)
)

// ReceivedFDs are the descriptors a message's control data (oob) carries (SCM_RIGHTS).
func ReceivedFDs(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if got, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

// Run runs role when argv[1] names it: serve, then exit, 1 with serve's error said as what's; otherwise it returns
// at once. main calls it for each role first.
func Run(role, what string, serve func() error) {
	if !Is(os.Args, role) {
		return
	}
	if err := serve(); err != nil {
		fmt.Fprintf(os.Stderr, "sessionfs: %s: %v\n", what, err)
		os.Exit(1)
	}
	os.Exit(0)
}
