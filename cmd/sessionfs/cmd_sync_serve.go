//go:build !nobackends

package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/remote"
)

// syncServeCmd is what "sessionfs sync" runs over ssh on the other machine when sessionfs is there: sftp on
// stdin and stdout, confined beneath the session's folder (remote.Serve). Not for people: hidden.
func (a *app) syncServeCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "sync-serve ID",
		Short:  backendCommands["sync-serve"],
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := layout.ValidateID(args[0]); err != nil {
				return err
			}
			s, err := a.openStore()
			if err != nil {
				return err
			}
			return remote.Serve(stdio{}, s, args[0])
		},
	}
}

// stdio is stdin and stdout as one stream.
type stdio struct{}

func (stdio) Read(p []byte) (int, error)  { return os.Stdin.Read(p) }
func (stdio) Write(p []byte) (int, error) { return os.Stdout.Write(p) }
func (stdio) Close() error                { os.Stdin.Close(); return os.Stdout.Close() }
