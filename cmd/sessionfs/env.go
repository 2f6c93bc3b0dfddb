package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/claude"
	"github.com/sessionfs/sessionfs/layout"
)

func (a *app) envCmd() *cobra.Command {
	var container bool
	cmd := &cobra.Command{
		Use:   "env ID",
		Short: "Print export lines that point a shell at a session (for eval)",
		Example: `  eval "$(sessionfs env fix-login)" && cd "$SESSION_DIR/workspace" && claude
  sessionfs env fix-login --container   # the paths a container sees`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, m, err := a.session(args[0])
			if err != nil {
				return err
			}
			p := layout.ContainerPaths
			if !container {
				dir, _ := sessionDir(s, m.ID)
				p = layout.Derive(dir)
			}
			for _, kv := range [][2]string{
				{"SESSIONFS_SESSION", m.ID},
				{"SESSION_DIR", p.Root},
				{claude.EnvConfigDir, p.Claude},
				{claude.EnvProjectDirName, claude.ProjectDirName},
			} {
				fmt.Fprintf(cmd.OutOrStdout(), "export %s=%s\n", kv[0], shellQuote(kv[1]))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&container, "container", false, "print the paths as containers and sandboxes see them")
	return cmd
}
