//go:build nobackends

package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/spf13/cobra"
)

// backendCmds are backendCommands as this binary lists them: a name and a line for the root's help and
// completion, the command itself sessionfs-backends's.
func (a *app) backendCmds() []*cobra.Command {
	var cmds []*cobra.Command
	for _, name := range slices.Sorted(maps.Keys(backendCommands)) {
		cmds = append(cmds, &cobra.Command{
			Use: name, Short: backendCommands[name], Hidden: name == "sync-serve",
			DisableFlagParsing: true, // its flags are sessionfs-backends's to read
			RunE:               func(*cobra.Command, []string) error { return runBackends() },
		})
	}
	return cmds
}

// runBackendsIfAsked runs sessionfs-backends in this process's place when the command line names one of
// backendCommands; it returns only when it does not.
func runBackendsIfAsked() {
	if !forBackends(os.Args[1:]) {
		return
	}
	err := runBackends()
	fmt.Fprintln(os.Stderr, "sessionfs: "+oneLine(err.Error()))
	os.Exit(ownFailure)
}

// runBackends runs sessionfs-backends, beside this binary, in this process's place (the same pid, terminal,
// signals and exit status); it returns only its error.
func runBackends() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	path := filepath.Join(filepath.Dir(self), backendsBinary)
	if os.Getenv(backendsMarker) != "" { // it ran us: a sessionfs installed in its place, which would run itself
		return fmt.Errorf("%s is a sessionfs built without the backends, not the whole CLI (make install puts both in place)", path)
	}
	err = syscall.Exec(path, os.Args, append(os.Environ(), backendsMarker+"=1"))
	if errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("this command runs %s, which is not beside %s (make install puts both there)", path, self)
	}
	return fmt.Errorf("run %s: %w", path, err)
}
