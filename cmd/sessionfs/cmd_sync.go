package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/backends/modal"
)

func (a *app) syncCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "sync push|pull ID",
		Short: "Sync a session with its Modal Volume (one v2 Volume per session)",
		Long: `sync push makes the session's Modal Volume (sessionfs-<id>) hold the session as it is: what changed on the
Volume since the last sync is brought in first (a file changed on both sides keeps both), then only the 8 MiB
blocks the Volume lacks are uploaded, and local deletions are propagated. sync pull brings the Volume's changes
back by a three-way comparison with the last agreed state: a file changed on both sides takes the Volume's version
and keeps the local one beside it as <name>.sessionfs-conflict-<run>, but for an agent's conversation both sides
added to, which is joined line by line (every turn of both, in time order); transcript folders made for other
cwds are folded into the session's canonical one. Credentials are read the Modal way: MODAL_TOKEN_ID, MODAL_TOKEN_SECRET,
MODAL_SERVER_URL, MODAL_ENVIRONMENT, or the active profile of ~/.modal.toml.`,
		Example: `  sessionfs sync push fix-login
  sessionfs sync pull fix-login`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: a.completeSync,
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] != "push" && args[0] != "pull" {
				return usageError("sync: want push or pull, then the session id")
			}
			return a.runSync(cmd.OutOrStdout(), args[0], args[1])
		},
	}
}

// runSync pushes session arg to its Modal Volume, or pulls the Volume's changes (direction: push or pull).
func (a *app) runSync(w io.Writer, direction, arg string) error {
	s, m, err := a.session(arg)
	if err != nil {
		return err
	}
	c, err := modal.Connect()
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, stop := interruptible()
	defer stop()
	sy, err := modal.NewSyncer(ctx, c, s, m.ID)
	if err != nil {
		return err
	}
	var finish func()
	sy.Progress, sy.Total, finish = transferBar(direction)
	defer finish()
	if direction == "push" {
		return syncPush(ctx, w, sy, m.ID)
	}
	return syncPull(ctx, w, sy)
}

// syncPush pushes session id to its Volume, having brought in first what changed there.
func syncPush(ctx context.Context, w io.Writer, sy *modal.Syncer, id string) error {
	rep, err := sy.Push(ctx)
	if err != nil {
		return err
	}
	if mr := rep.Merged; mr.Applied+mr.Deleted+mr.Conflicts+mr.Joined > 0 {
		fmt.Fprintf(w, "brought in first what changed on the Volume: %s, removed %d, %s kept beside, %s joined\n",
			plural(mr.Applied, "file"), mr.Deleted, plural(mr.Conflicts, "conflict"), plural(mr.Joined, "conversation"))
	}
	fmt.Fprintf(w, "pushed %s (%s, %s), removed %d, to Volume %s\n",
		plural(rep.Files, "file"), plural(rep.Blocks, "block"), humanize.IBytes(uint64(rep.Bytes)), rep.Deleted, modal.VolumeName(id))
	return nil
}

// syncPull brings the Volume's changes into the session, conflicts kept beside under this run's name.
func syncPull(ctx context.Context, w io.Writer, sy *modal.Syncer) error {
	rep, err := sy.Pull(ctx, time.Now().UTC().Format("20060102T150405Z"))
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "pulled %s, removed %d, %s kept beside, %s joined line by line, %s folded\n",
		plural(rep.Applied, "file"), rep.Deleted, plural(rep.Conflicts, "conflict"), plural(rep.Joined, "conversation"),
		plural(rep.Folded, "transcript"))
	return nil
}
