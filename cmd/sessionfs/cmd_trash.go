package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/layout"
)

func (a *app) trashCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trash",
		Short: "List and restore removed sessions and conversations",
		Long: `Nothing sessionfs removes is deleted until "sessionfs gc --trash":
  - a session removed with "sessionfs rm ID", or with rm -rf sessions/ID through the mount, waits whole in
    <store>/trash/ID.<time>; "trash restore ID" puts it back;
  - through the mount, removing a transcript (a <uuid>.jsonl under .claude/projects, or its <uuid>/ folder)
    moves it to the session's transcript trash: Claude Code deletes transcripts older than cleanupPeriodDays at
    start-up, and people rm the wrong thing; "trash restore ID UUID" puts it back.`,
		Example: `  sessionfs trash ls
  sessionfs trash restore fix-login
  sessionfs trash ls fix-login
  sessionfs trash restore fix-login 2fe2d21b-be8f-4b12-b46b-12e68f6e9f01`,
	}
	cmd.AddCommand(a.trashLsCmd(), a.trashRestoreCmd())
	return cmd
}

func (a *app) trashLsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls [ID]",
		Short: "List removed sessions, or the removed conversations of session ID",
		Long: `With no ID, ls lists the removed sessions. With the ID of a session in the store, it lists the
conversations removed from its transcript folder; with the ID of a removed session, that session's removed
copies.`,
		Example: `  sessionfs trash ls
  sessionfs trash ls fix-login --json`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runTrashLs(cmd.OutOrStdout(), args, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// runTrashLs lists the removed sessions; with an ID (args[0]), the conversations removed from that session, or the
// removed copies of that session when none is in the store.
func (a *app) runTrashLs(w io.Writer, args []string, asJSON bool) error {
	s, err := a.openStore()
	if err != nil {
		return err
	}
	if len(args) == 0 {
		trashed, err := s.TrashedSessions("")
		if err != nil {
			return err
		}
		return listTrashedSessions(w, trashed, asJSON)
	}
	id, err := a.resolveID(args[0])
	if err == nil {
		return listTrashedTranscripts(w, s, id, asJSON)
	}
	if !errors.Is(err, layout.ErrNotFound) {
		return err
	}
	trashed, terr := s.TrashedSessions(args[0])
	if terr != nil || len(trashed) == 0 {
		return err
	}
	return listTrashedSessions(w, trashed, asJSON)
}

func (a *app) trashRestoreCmd() *cobra.Command {
	var as string
	cmd := &cobra.Command{
		Use:   "restore ID|NAME [UUID]",
		Short: "Put back a removed session, or a conversation removed from session ID (the newest copy)",
		Long: `restore ID puts back the newest removed copy of session ID; restore NAME the copy of that name in the
trash (the IN THE TRASH AS column of "trash ls", for an older copy). A session of that id that exists again is
never overwritten: --as NEW puts the copy back as session NEW instead (its owner's record, for Kubernetes, goes
with it).
restore ID UUID puts back the newest removed copy of conversation UUID into session ID.`,
		Example: `  sessionfs trash restore fix-login
  sessionfs trash restore fix-login.20261125T101500.123456789Z --as fix-login-old
  sessionfs trash restore fix-login 2fe2d21b-be8f-4b12-b46b-12e68f6e9f01`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: a.completeTrashed,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				return a.restoreSession(cmd.OutOrStdout(), args[0], as)
			}
			if as != "" {
				return usageError("trash restore: --as applies to a session; a conversation goes back into session " + args[0])
			}
			return a.restoreConversation(cmd.OutOrStdout(), args[0], args[1])
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "restore the session as `NEW` (when its id is taken again)")
	return cmd
}

// restoreSession puts back the removed session which (an id: its newest copy; or a copy's name in the trash) as
// session as (its own id when "").
func (a *app) restoreSession(w io.Writer, which, as string) error {
	s, err := a.openStore()
	if err != nil {
		return err
	}
	dir, err := s.RestoreSessionAs(which, as)
	if errors.Is(err, layout.ErrExists) && as == "" {
		return fmt.Errorf("%w (--as NEW restores it as session NEW)", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "restored %s\n", dir)
	return nil
}

// restoreConversation puts back the newest removed copy of conversation uuid (or the one in the trash whose id
// starts with it) into session arg.
func (a *app) restoreConversation(w io.Writer, arg, uuid string) error {
	s, m, err := a.exactSession(arg)
	if err != nil {
		return err
	}
	if trashed, err := s.TrashedTranscripts(m.ID); err == nil {
		var matches []string
		for _, t := range trashed {
			if strings.HasPrefix(t.UUID, uuid) && !slices.Contains(matches, t.UUID) {
				matches = append(matches, t.UUID)
			}
		}
		if len(uuid) >= minConversationPrefix {
			if uuid, err = pickPrefix(uuid, matches, "conversation"); err != nil {
				return err
			}
		}
	}
	restored, err := s.RestoreTranscript(m.ID, uuid)
	if err != nil {
		return err
	}
	for _, r := range restored {
		fmt.Fprintf(w, "restored %s\n", r)
	}
	return nil
}

// listTrashedSessions prints the removed sessions trashed.
func listTrashedSessions(w io.Writer, trashed []layout.TrashedSession, asJSON bool) error {
	if asJSON {
		return printJSON(w, orEmpty(trashed))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tREMOVED\tSIZE\tIN THE TRASH AS")
	for _, t := range trashed {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.ID, ago(t.Removed), humanize.IBytes(uint64(t.Size)), t.Name)
	}
	return tw.Flush()
}

// listTrashedTranscripts prints the conversations removed from session id.
func listTrashedTranscripts(w io.Writer, s *layout.Store, id string, asJSON bool) error {
	trashed, err := s.TrashedTranscripts(id)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(w, orEmpty(trashed))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "UUID\tREMOVED\tFILES\tSIZE")
	for _, t := range trashed {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", t.UUID, ago(t.Removed), t.Files, humanize.IBytes(uint64(t.Size)))
	}
	return tw.Flush()
}
