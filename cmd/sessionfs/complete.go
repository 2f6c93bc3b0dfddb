package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// completeIDs completes session ids for the shell completion cobra generates.
func (a *app) completeIDs(_ *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	s, err := a.openStore()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ids, _ := s.IDs()
	var out []string
	for _, id := range ids {
		if strings.HasPrefix(id, prefix) {
			out = append(out, id)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
