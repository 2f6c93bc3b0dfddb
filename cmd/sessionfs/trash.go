package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
)

func (a *app) trashCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trash",
		Short: "List and restore conversations removed from a session's transcript folder",
		Long: `Through the mount, removing a transcript (a <uuid>.jsonl under .claude/projects, or its <uuid>/ folder)
moves it to the session's transcript trash instead of deleting it: Claude Code deletes transcripts older than
cleanupPeriodDays at start-up, and people rm the wrong thing. "sessionfs gc --trash" empties the trash.`,
		Example: `  sessionfs trash ls fix-login
  sessionfs trash restore fix-login 2fe2d21b-be8f-4b12-b46b-12e68f6e9f01`,
	}
	var asJSON bool
	ls := &cobra.Command{
		Use:               "ls ID",
		Short:             "List a session's removed conversations",
		Example:           `  sessionfs trash ls fix-login`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, m, err := a.session(args[0])
			if err != nil {
				return err
			}
			trashed, err := s.TrashedTranscripts(m.ID)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), orEmpty(trashed))
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "UUID\tREMOVED\tFILES\tSIZE")
			for _, t := range trashed {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", t.UUID, ago(t.Removed), t.Files, humanize.IBytes(uint64(t.Size)))
			}
			return tw.Flush()
		},
	}
	ls.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	restore := &cobra.Command{
		Use:               "restore ID UUID",
		Short:             "Put a removed conversation back (its newest removed copy)",
		Example:           `  sessionfs trash restore fix-login 2fe2d21b-be8f-4b12-b46b-12e68f6e9f01`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: a.completeTrashed,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, m, err := a.session(args[0])
			if err != nil {
				return err
			}
			restored, err := s.RestoreTranscript(m.ID, args[1])
			if err != nil {
				return err
			}
			for _, r := range restored {
				fmt.Fprintf(cmd.OutOrStdout(), "restored %s\n", r)
			}
			return nil
		},
	}
	cmd.AddCommand(ls, restore)
	return cmd
}
