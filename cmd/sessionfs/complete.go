package main

import (
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// completeIDs completes a session id as the command's first argument; after it (a command to run, say) the
// shell completes as it would without sessionfs.
func (a *app) completeIDs(_ *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveDefault
	}
	return a.matchingIDs(prefix), cobra.ShellCompDirectiveNoFileComp
}

// completeFirstID completes a session id as the first argument and nothing after it (rename's NEW: a new id).
func (a *app) completeFirstID(_ *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.matchingIDs(prefix), cobra.ShellCompDirectiveNoFileComp
}

// completeManyIDs completes session ids in every position (rm ID...).
func (a *app) completeManyIDs(_ *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	return a.matchingIDs(prefix), cobra.ShellCompDirectiveNoFileComp
}

// matchingIDs are the ids of the store's sessions that begin with prefix.
func (a *app) matchingIDs(prefix string) []string {
	s, err := a.openStore()
	if err != nil {
		return nil
	}
	ids, _ := s.IDs()
	var out []string
	for _, id := range ids {
		if strings.HasPrefix(id, prefix) {
			out = append(out, id)
		}
	}
	return out
}

// completeTrashed completes trash restore: a session id (in the store or the trash), then the uuids waiting in
// its transcript trash.
func (a *app) completeTrashed(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		out := a.matchingIDs(prefix)
		if s, err := a.openStore(); err == nil {
			trashed, _ := s.TrashedSessions("")
			for _, t := range trashed {
				if strings.HasPrefix(t.ID, prefix) && !slices.Contains(out, t.ID) {
					out = append(out, t.ID)
				}
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	case 1:
		s, err := a.openStore()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		trashed, _ := s.TrashedTranscripts(args[0])
		var out []string
		for _, t := range trashed {
			if strings.HasPrefix(t.UUID, prefix) {
				out = append(out, t.UUID)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// completeSync completes sync: push or pull, then a session id.
func (a *app) completeSync(_ *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return []string{"push", "pull"}, cobra.ShellCompDirectiveNoFileComp
	}
	if len(args) == 1 {
		return a.matchingIDs(prefix), cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// fixedValues completes a flag from a fixed list.
func fixedValues(vals ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return vals, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeLabels completes label: a session id, then its labels as KEY- (to remove) and KEY= (to change).
func (a *app) completeLabels(_ *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return a.matchingIDs(prefix), cobra.ShellCompDirectiveNoFileComp
	}
	_, m, err := a.session(args[0])
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m.Labels)) {
		for _, c := range []string{k + "-", k + "="} {
			if strings.HasPrefix(c, prefix) {
				out = append(out, c)
			}
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}
