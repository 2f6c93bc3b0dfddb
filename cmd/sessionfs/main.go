// Command sessionfs keeps each coding-agent session in one folder: a store of plain folders, a FUSE view of it
// that makes Claude Code's transcripts resumable from any cwd, and backends that run agents in a session.
//
// Each command is one file, cmd_<verb>.go: its flags, and a RunE that checks them and makes one call (a function
// beside it, or the library). What several commands share lives in files named for it: main.go (exit codes and
// the one-line error), root.go (the root command, the app and its store, the mountpoint), ids.go (session and
// conversation ids as typed), output.go (JSON, --format, the words of messages, warnings), json.go (a session and
// its runs as --json shows them), progress.go (progress bars and Ctrl-C), complete.go (shell completion),
// runner.go (what exec, run and resume share: the run lease, -e and -w, the run and its exit code), agentflag.go
// (the --agent flag), landlock.go (the --landlock flags), daemon.go (mount --daemon), relay.go (a foreground
// mount's relay of the terminal's signals), backends.go (the commands built only into sessionfs-backends, the
// whole CLI, which the sessionfs binary, built with the tag nobackends, runs for them).
package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"github.com/sessionfs/sessionfs/backends/local"
	"github.com/sessionfs/sessionfs/internal/lazyregexp"
	"github.com/sessionfs/sessionfs/internal/selfexec"
	"github.com/sessionfs/sessionfs/mount"
	"github.com/sessionfs/sessionfs/trust"
)

func main() {
	runBackendsIfAsked() // sessionfs-backends in this one's place, for the commands that need a backend's SDK
	// Under a memory cgroup (a unit's MemoryMax, a pod's limit) the Go heap is held to 70% of it, so the collector
	// works harder before the kernel kills: under round 4's attacks in 128 MiB the daemon serves on (killed twice
	// in 20 s before, TestAttackDaemonUnderMemoryLimit). GOMEMLIMIT, when set, is kept. Only in the processes that
	// serve: finding the cgroup (a read of mountinfo) cost every command 3 ms of a 20 ms start.
	if servesLong(os.Args) {
		_, _ = memlimit.SetGoMemLimitWithOpts(memlimit.WithRatio(0.7), memlimit.WithProvider(memlimit.FromCgroup))
	}
	local.RunHelper()   // the namespace helper of local runs, when asked: it never returns then
	mount.RunHelper()   // the privileged helper of a confined mount, when asked: it never returns then
	mount.RunTakeover() // a daemon the helper starts to take a mount's connection over: it never returns then
	cmd, err := newRootCmd().ExecuteC()
	var exit exitCode
	var coded codedError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		os.Exit(int(exit))
	case errors.As(err, &coded):
		fmt.Fprintln(os.Stderr, "sessionfs: "+oneLine(coded.err.Error()))
		os.Exit(coded.code)
	case errors.As(err, new(*trust.Refused)):
		fmt.Fprintln(os.Stderr, "sessionfs: "+linesSafe(err.Error()))
		os.Exit(ownFailure)
	default:
		msg, suggestions := cutSuggestions(err.Error())
		msg = oneLine(msg)
		if isUsage(err) && cmd != nil {
			msg = plainArgsError(msg, cmd.UseLine()) + " (see " + cmd.CommandPath() + " --help)"
		}
		fmt.Fprintln(os.Stderr, "sessionfs: "+msg+suggestions)
		os.Exit(ownFailure)
	}
}

// servesLong reports whether this process serves for long, its heap worth holding under a memory limit: a mount's
// daemon (the command, or one taking a mount over), its helper, the web page, the CSI plugin.
func servesLong(args []string) bool {
	if selfexec.Is(args, selfexec.Helper) || selfexec.Is(args, selfexec.Takeover) {
		return true
	}
	switch commandWord(args[1:]) {
	case "mount", "ui", "csi":
		return true
	}
	return false
}

// linesSafe is a message of several lines (a refusal that lists what it refused), each made one safe line and
// the ones after the first indented.
func linesSafe(msg string) string {
	lines := strings.Split(strings.TrimRight(msg, "\n"), "\n")
	for i, l := range lines {
		lines[i] = oneLine(l)
	}
	return strings.Join(lines, "\n  ")
}

// didYouMean is how cobra introduces the commands it suggests for a mistyped one, one a line.
const didYouMean = "\n\nDid you mean this?\n"

// unknownCommand is cobra's error for a command it does not know, naming what was typed.
var unknownCommand = lazyregexp.New(`^unknown command "([^"]*)"`)

// cutSuggestions splits cobra's error msg into its first part and its suggestions, kept one a line as cobra
// prints them ("" when none): oneLine would run them into the message.
func cutSuggestions(msg string) (head, suggestions string) {
	head, tail, ok := strings.Cut(msg, didYouMean)
	if !ok {
		return msg, ""
	}
	var names []string
	for _, s := range strings.Split(tail, "\n") {
		if s = oneLine(s); s != "" {
			names = append(names, s)
		}
	}
	// Closest first, whatever order cobra keeps its commands in (sorted once any help was made).
	if m := unknownCommand.FindStringSubmatch(head); m != nil {
		slices.SortStableFunc(names, func(a, b string) int { return editDistance(m[1], a) - editDistance(m[1], b) })
	}
	var b strings.Builder
	for _, s := range names {
		b.WriteString("\n\t" + s)
	}
	if b.Len() == 0 {
		return head, ""
	}
	return head, "\n\nDid you mean this?" + b.String()
}

// isUsage reports whether err is a mistake in how the command was called (ours, or cobra's about flags and
// arguments), which the command's --help answers.
func isUsage(err error) bool {
	var u usageError
	if errors.As(err, &u) {
		return true
	}
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "invalid argument",
		"accepts ", "requires at least", "requires at most", "flag needs an argument", "required flag",
		"bad flag syntax"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// cobraArgs matches cobra's own wording of a wrong number of arguments ("accepts 1 arg(s), received 0").
var cobraArgs = lazyregexp.New(`^(accepts (at most |between )?[\d a-z]+ arg\(s\)|requires at (least|most) \d+ arg\(s\)),( only)? received (\d+)$`)

// plainArgsError says a wrong number of arguments as a person would: what the command takes, and what it got.
func plainArgsError(msg, useLine string) string {
	m := cobraArgs.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	got := "nothing"
	if m[5] != "0" {
		got = m[5] + " argument"
		if m[5] != "1" {
			got += "s"
		}
	}
	return fmt.Sprintf("usage: %s (got %s)", strings.TrimSuffix(useLine, " [flags]"), got)
}

// ownFailure is the exit code of sessionfs's own failures (bad usage, a missing session, an unreachable
// engine), as docker reports its own: a command sessionfs runs keeps its own codes (126: it cannot be executed,
// 127: not found), so a script can tell the two apart.
const ownFailure = 125

// exitCode ends the program with a code and no message: the exit status of a command the CLI ran for the user.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// codedError is a failure with its own exit code (127: the command was not found, as a shell says).
type codedError struct {
	code int
	err  error
}

func (e codedError) Error() string { return e.err.Error() }
func (e codedError) Unwrap() error { return e.err }

// usageError is bad input on the command line: exit code 125, as docker gives.
type usageError string

func (e usageError) Error() string { return string(e) }
