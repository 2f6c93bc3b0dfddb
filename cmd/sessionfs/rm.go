package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/layout"
)

func (a *app) rmCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rm ID...",
		Short: "Move sessions to the trash (gc --trash deletes them for good)",
		Example: `  sessionfs rm fix-login old-experiment
  sessionfs gc --trash   # later, to free the space`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := a.openStore()
			if err != nil {
				return err
			}
			var errs []error
			for _, id := range args {
				dst, err := s.Remove(id)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s -> %s\n", id, dst)
			}
			return errors.Join(errs...)
		},
	}
	return cmd
}

func (a *app) gcCmd() *cobra.Command {
	var opts layout.GCOptions
	var idle time.Duration
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Empty the trash and/or trash sessions idle for longer than --idle",
		Long: `gc deletes for good only what you ask: --trash empties the trash (sessions removed with rm or
rm -rf through the mount); --idle D first moves sessions with no activity for D into the trash.`,
		Example: `  sessionfs gc --trash
  sessionfs gc --idle 720h --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !opts.Trash && idle == 0 {
				return errors.New("gc: say what to collect: --trash, --idle DURATION, or both")
			}
			s, err := a.openStore()
			if err != nil {
				return err
			}
			opts.IdleFor = idle
			prefix := ""
			if opts.DryRun {
				prefix = "would "
			}
			opts.OnRemoved = func(what, path string) { fmt.Fprintf(cmd.OutOrStdout(), "%s%s %s\n", prefix, what, path) }
			return s.GC(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Trash, "trash", false, "delete everything in the trash")
	cmd.Flags().DurationVar(&idle, "idle", 0, "move sessions idle for longer than this to the trash (e.g. 720h)")
	cmd.Flags().BoolVarP(&opts.DryRun, "dry-run", "n", false, "say what would be done, do nothing")
	return cmd
}
