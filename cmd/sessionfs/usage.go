package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// strictUsage makes cobra's own commands refuse what they do not know as every other command does (exit 125):
// help of a topic that does not exist, and completion of a shell it has no script for, printed their help and
// exited 0, so a script took the mistake for success.
func strictUsage(root *cobra.Command) {
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return usageError(fmt.Sprintf("unknown help topic %q", strings.Join(args, " ")))
			}
			return cmd.Help()
		},
		ValidArgsFunction: func(c *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
			var names []string
			for _, sub := range c.Root().Commands() {
				if sub.IsAvailableCommand() {
					names = append(names, sub.Name())
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
	})
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.RunE = func(c *cobra.Command, args []string) error {
				if len(args) > 0 {
					return usageError(fmt.Sprintf("no completion script for %q (bash, zsh, fish or powershell)", args[0]))
				}
				return c.Help()
			}
		}
	}
}
