//go:build !nobackends

package main

import "github.com/spf13/cobra"

// backendCmds are backendCommands, linked in: this is sessionfs-backends (or a go install's whole CLI).
func (a *app) backendCmds() []*cobra.Command {
	return []*cobra.Command{a.runCmd(), a.resumeCmd(), a.doctorCmd(), a.syncCmd(), a.syncServeCmd(), a.csiCmd(), docsCmd()}
}

// runBackendsIfAsked does nothing here: every command is linked in.
func runBackendsIfAsked() {}
