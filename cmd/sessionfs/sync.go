package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sessionfs/sessionfs/backends/modal"
)

func (a *app) syncCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sync push|pull ID",
		Short: "Sync a session with its Modal Volume (one v2 Volume per session)",
		Long: `sync push makes the session's Modal Volume (sessionfs-<id>) hold the session as it is: what changed on the
Volume since the last sync is brought in first (a file changed on both sides keeps both), then only the 8 MiB
blocks the Volume lacks are uploaded, and local deletions are propagated. sync pull brings the Volume's changes
back by a three-way comparison with the last agreed state: a file changed on both sides takes the Volume's version
and keeps the local one beside it as <name>.sessionfs-conflict-<run>; transcript folders made for other cwds are
folded into the session's canonical one. Credentials are read the Modal way: MODAL_TOKEN_ID, MODAL_TOKEN_SECRET,
MODAL_SERVER_URL, MODAL_ENVIRONMENT, or the active profile of ~/.modal.toml.`,
		Example: `  sessionfs sync push fix-login
  sessionfs sync pull fix-login`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: a.completeSync,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, id := args[0], args[1]
			if dir != "push" && dir != "pull" {
				return usageError("sync: want push or pull, then the session id")
			}
			s, m, err := a.session(id)
			if err != nil {
				return err
			}
			c, err := modal.Connect()
			if err != nil {
				return err
			}
			defer c.Close()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			sy, err := modal.NewSyncer(ctx, c, s, m.ID)
			if err != nil {
				return err
			}
			var finish func()
			sy.Progress, sy.Total, finish = transferBar(dir)
			defer finish()
			w := cmd.OutOrStdout()
			if dir == "push" {
				rep, err := sy.Push(ctx)
				if err != nil {
					return err
				}
				if mr := rep.Merged; mr.Applied+mr.Deleted+mr.Conflicts > 0 {
					fmt.Fprintf(w, "brought in first what changed on the Volume: %s, removed %d, %s kept beside\n",
						plural(mr.Applied, "file"), mr.Deleted, plural(mr.Conflicts, "conflict"))
				}
				fmt.Fprintf(w, "pushed %s (%s, %s), removed %d, to Volume %s\n",
					plural(rep.Files, "file"), plural(rep.Blocks, "block"), humanize.IBytes(uint64(rep.Bytes)), rep.Deleted, modal.VolumeName(m.ID))
				return nil
			}
			rep, err := sy.Pull(ctx, time.Now().UTC().Format("20060102T150405Z"))
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "pulled %s, removed %d, %s kept beside, %s folded\n",
				plural(rep.Applied, "file"), rep.Deleted, plural(rep.Conflicts, "conflict"), plural(rep.Folded, "transcript"))
			return nil
		},
	}
	return cmd
}

// transferBar is a progress bar on stderr (when it is a terminal) whose total grows as the syncer announces
// transfers; finish ends it.
func transferBar(desc string) (progress, total func(int64), finish func()) {
	if !term.IsTerminal(int(os.Stderr.Fd())) {
		return nil, nil, func() {}
	}
	bar := progressbar.DefaultBytes(-1, desc)
	var max int64
	return func(n int64) { _ = bar.Add64(n) },
		func(n int64) { max += n; bar.ChangeMax64(max) },
		func() { _ = bar.Finish() }
}
