//go:build !nobackends

package main

import (
	"os"

	"github.com/spf13/cobra"
)

// backendCmds are backendCommands, linked in: this is sessionfs-backends (or a go install's whole CLI).
func (a *app) backendCmds() []*cobra.Command {
	return []*cobra.Command{a.runCmd(), a.resumeCmd(), a.doctorCmd(), a.syncCmd(), a.syncServeCmd(), a.csiCmd(), docsCmd()}
}

// runBackendsIfAsked runs nothing here, every command being linked in: it drops the mark sessionfs leaves for
// this binary, which what it runs must not inherit.
func runBackendsIfAsked() { os.Unsetenv(backendsMarker) }
