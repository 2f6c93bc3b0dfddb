package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/layout"
)

func (a *app) findCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "find UUID",
		Short: "Print the session that holds a conversation of any agent",
		Long: `find prints the session that holds conversation UUID: a Claude transcript, folded or not, else a Codex,
Gemini CLI or Qwen Code session of that id (the id each prints, and the one "sessionfs show" lists).

When several sessions hold a transcript of that uuid (a copy, a fork, or a session that planted one), the
session whose transcript was made first owns it: find prints it, resume resumes it, by-claude-id/ points at it.
The others are named on stderr (and under "also" with --json).`,
		Example: `  sessionfs find 2fe2d21b-be8f-4b12-b46b-12e68f6e9f01
  sessionfs find 019a2c1e-7f3d-7c41-9b2e-3f1d0c8e5a7b --json   # a Codex session id: "agent": "codex"`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeConversations,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runFind(cmd.OutOrStdout(), args[0], asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// runFind prints the session that owns conversation uuid (or the one conversation whose id starts with it).
func (a *app) runFind(w io.Writer, uuid string, asJSON bool) error {
	s, err := a.openStore()
	if err != nil {
		return err
	}
	useMountsWatch(s)
	finish := indexBar(s)
	uuid, holders, agent, err := findIndexed(s, uuid)
	finish()
	if err != nil {
		return err
	}
	id := holders[0].ID
	if asJSON {
		dir, _ := sessionDir(s, id)
		return printJSON(w, map[string]any{"session": id, "dir": dir, "conversation": uuid,
			"agent": agent, "also": holderIDs(holders[1:])})
	}
	fmt.Fprintln(w, id)
	return nil
}

// findConversation returns the whole id of conversation uuid, or of the one whose id starts with it (watch prints
// 8 characters), with the sessions holding it (the owner first) and its agent's name.
func findConversation(s *layout.Store, uuid string) (string, []agents.Holder, string, error) {
	holders, agent, err := anyHolders(s, uuid)
	if errors.Is(err, claude.ErrNoConversation) {
		full, xerr := expandConversation(s, uuid)
		if xerr != nil {
			return "", nil, "", xerr
		}
		if full != uuid {
			uuid = full
			holders, agent, err = anyHolders(s, uuid)
		}
	}
	return uuid, holders, agent, err
}

// findIndexed is findConversation looking only in the sessions the store's index says may hold conversation
// uuid, or one whose id starts with it (the index is brought up to date first, so a session changed behind it
// is among them); every session when the index cannot be read.
func findIndexed(s *layout.Store, uuid string) (string, []agents.Holder, string, error) {
	among, err := s.ConversationCandidates(mayBeConversation(uuid))
	if err != nil {
		return findConversation(s, uuid)
	}
	holders, agent, err := anyHoldersAmong(s, uuid, among)
	if errors.Is(err, claude.ErrNoConversation) && len(uuid) >= minConversationPrefix && layout.ValidateID(uuid) == nil {
		found := map[string]bool{}
		for _, id := range among {
			if sess, err := s.OpenSession(id); err == nil {
				cs, _ := all.SessionConversations(sess)
				sess.Close()
				for _, c := range cs {
					if startsConversation(c, uuid) {
						found[c.ID] = true
					}
				}
			}
		}
		full, xerr := pickPrefix(uuid, slices.Sorted(maps.Keys(found)), "conversation")
		if xerr != nil {
			return "", nil, "", xerr
		}
		if full != uuid {
			uuid = full
			holders, agent, err = anyHoldersAmong(s, uuid, among)
		}
	}
	return uuid, holders, agent, err
}

// mayBeConversation says which conversation ids of the index may be arg's, generously (a few sessions too many
// cost a look each): one that holds arg (its start, or what follows an agent's prefix such as opencode's
// "ses_"), or that arg starts with (a file name that holds only the start of its id, as Gemini's).
func mayBeConversation(arg string) func(conv string) bool {
	arg = strings.ToLower(arg)
	return func(conv string) bool {
		conv = strings.ToLower(conv)
		return strings.Contains(conv, arg) || strings.HasPrefix(arg, conv)
	}
}

// anyHoldersAmong is anyHolders looking only in sessions among.
func anyHoldersAmong(s *layout.Store, uuid string, among []string) ([]agents.Holder, string, error) {
	holders, err := claude.HoldersAmong(s, uuid, among)
	if err == nil && len(holders) == 0 {
		err = fmt.Errorf("conversation %s: %w", uuid, claude.ErrNoConversation)
	}
	if err == nil {
		warnOtherHolders(uuid, holders, "transcript")
		return holders, claude.Agent.Name, nil
	}
	if !errors.Is(err, claude.ErrNoConversation) {
		return nil, "", err
	}
	others, aerr := all.HoldersAmong(s, uuid, among)
	if aerr != nil || len(others) == 0 {
		return nil, "", err
	}
	warnOtherHolders(uuid, others, "file")
	return others, others[0].Agent, nil
}
