package main

import (
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
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

// completeTrashed completes trash restore: what can be restored (a removed session's id, or the id of a session
// with removed conversations), then the uuids waiting in that session's transcript trash.
func (a *app) completeTrashed(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	s, err := a.openStore()
	if err != nil || len(args) > 1 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	if len(args) == 1 {
		trashed, _ := s.TrashedTranscripts(args[0])
		var out []string
		for _, t := range trashed {
			if strings.HasPrefix(t.UUID, prefix) && !slices.Contains(out, t.UUID) {
				out = append(out, t.UUID)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	trashed, _ := s.TrashedSessions("")
	for _, t := range trashed {
		if strings.HasPrefix(t.ID, prefix) && !slices.Contains(out, t.ID) {
			out = append(out, t.ID)
		}
	}
	for _, id := range a.matchingIDs(prefix) {
		if t, _ := s.TrashedTranscripts(id); len(t) > 0 && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeConversations completes find's UUID: the ids of every agent's conversations in the store, never file
// names.
func (a *app) completeConversations(_ *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.matchingConversations(prefix), cobra.ShellCompDirectiveNoFileComp
}

// completeResume completes resume's UUID|ID: session ids, then conversation ids; after it, what claude takes.
func (a *app) completeResume(_ *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveDefault
	}
	return append(a.matchingIDs(prefix), a.matchingConversations(prefix)...), cobra.ShellCompDirectiveNoFileComp
}

// matchingConversations are the ids of the store's conversations (of any agent) that begin with prefix, sorted.
func (a *app) matchingConversations(prefix string) []string {
	s, err := a.openStore()
	if err != nil {
		return nil
	}
	found, _ := conversationIDs(s, mayBeConversation(prefix), func(c agents.Conversation) bool { return strings.HasPrefix(c.ID, prefix) })
	return found
}

// completeSync completes sync: push, pull or a session id, then a session id.
func (a *app) completeSync(_ *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return append([]string{"push", "pull"}, a.matchingIDs(prefix)...), cobra.ShellCompDirectiveNoFileComp
	}
	if len(args) == 1 && (args[0] == "push" || args[0] == "pull") {
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

// completeConversation completes a session id, then the ids of that session's conversations, any agent's, newest
// first (log ID CONVERSATION): not file names.
func (a *app) completeConversation(_ *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		return a.matchingIDs(prefix), cobra.ShellCompDirectiveNoFileComp
	case 1:
		s, err := a.openStore()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		sess, err := s.OpenSession(args[0])
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer sess.Close()
		convs, _ := all.SessionConversations(sess)
		var out []string
		for _, c := range convs {
			if strings.HasPrefix(c.ID, prefix) {
				out = append(out, c.ID+"\t"+c.Agent)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}
