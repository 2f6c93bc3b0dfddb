// Command sessionfs keeps each coding-agent session in one folder: a store of plain folders, a FUSE view of it
// that makes Claude Code's transcripts resumable from any cwd, and backends that run agents in a session.
package main

import (
	"errors"
	"fmt"
	"os"
)

func main() {
	err := newRootCmd().Execute()
	var exit exitCode
	switch {
	case err == nil:
	case errors.As(err, &exit):
		os.Exit(int(exit))
	default:
		fmt.Fprintln(os.Stderr, "sessionfs: "+oneLine(err.Error()))
		os.Exit(1)
	}
}

// exitCode ends the program with a code and no message: the exit status of a command the CLI ran for the user.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
