package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

func (a *app) renameCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rename OLD NEW",
		Short: "Rename a session (refused while something runs in it)",
		Long: `rename gives session OLD the id NEW: its folder is renamed in the store, nothing else changes. A
session's id is in the binds of the containers running in it and in the cwd of its processes: a session that
exec, run or resume runs in is refused (its run lease is held). Processes started in it otherwise (a shell
that ran eval "$(sessionfs env ID)") keep the old path. NEW must be a free, valid id.`,
		Example:           `  sessionfs rename 20261122-093000-1a2b3c fix-login`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: a.completeFirstID,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runRename(cmd.OutOrStdout(), args[0], args[1])
		},
	}
}

// runRename renames session arg to newID, refused while something runs in it.
func (a *app) runRename(w io.Writer, arg, newID string) error {
	id, err := a.exactID(arg)
	if err != nil {
		return err
	}
	if err := a.store.RenameIdle(id, newID); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s -> %s\n", id, newID)
	return nil
}
