package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/travel"
)

func (a *app) forkCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "fork ID NEW",
		Short: "Make session NEW a copy of session ID as it is now (reflinks where the filesystem can)",
		Long: `fork makes a new session with the same content as ID at this instant: workspace, app, mcps, every agent's
config folder and conversations. Files are cloned (reflinks, sharing their blocks until one side writes) where
the store's filesystem can (btrfs, XFS, ...), copied elsewhere. A conversation being written is copied up to its
last whole line. Both sessions resume their conversations and grow apart from there.

NEW's session.json records forked_from; "show" says so. For a conversation both hold, "find" names both and
the origin keeps it: by-claude-id/ and "resume UUID" lead to ID.`,
		Example: `  sessionfs fork fix-login fix-login-try2
  sessionfs exec fix-login-try2 -- claude --continue`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runFork(cmd.OutOrStdout(), args[0], args[1])
		},
	}
}

// runFork makes session newID a copy of session id, and says how much it copied and how.
func (a *app) runFork(w io.Writer, id, newID string) error {
	s, _, err := a.session(id)
	if err != nil {
		return err
	}
	ctx, stop := interruptible()
	defer stop()
	bar := newBar("forking")
	start := time.Now()
	rep, err := travel.Fork(ctx, s, id, newID, travel.ForkOptions{Progress: func(done, total travel.Counts) {
		bar.update(done, total.Bytes, total.Files)
	}})
	bar.finish()
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("fork %s: interrupted; %s was not made", id, newID)
	}
	if err != nil {
		return err
	}
	for _, sk := range rep.Skipped {
		warnf("left out %s", oneLine(sk))
	}
	fmt.Fprintf(w, "forked %s into %s: %s, %s in %s; %s\n", id, newID, entries(rep.Files),
		humanize.IBytes(uint64(rep.Bytes)), time.Since(start).Round(time.Millisecond), copyMethod(rep))
	return nil
}

// copyMethod says how a fork copied its files: cloned (reflinks), copied, or some of each.
func copyMethod(rep *travel.ForkReport) string {
	if rep.Copied == 0 {
		return "files cloned (reflinks)"
	}
	if rep.Cloned > 0 {
		return fmt.Sprintf("%s cloned, %d copied", plural(rep.Cloned, "file"), rep.Copied)
	}
	return "files copied: the store's filesystem cannot clone them"
}
