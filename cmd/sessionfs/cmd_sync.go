//go:build !nobackends

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/backends/modal"
	"github.com/sessionfs/sessionfs/internal/config"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/remote"
)

func (a *app) syncCmd() *cobra.Command {
	var dryRun, withCredentials, unconfined bool
	cmd := &cobra.Command{
		Use:   "sync [push|pull] ID [REMOTE]",
		Short: backendCommands["sync"],
		Long: `sync carries a session to another place and back. REMOTE is another machine's store over ssh
(ssh://[user@]host[:port]/path or [user@]host:path; no path: ~/.local/share/sessionfs there), an S3-compatible
bucket (s3://bucket/prefix), or "modal" (the session's Modal Volume, sessionfs-<id>). A session remembers the
remote it last synced with, so "sessionfs sync ID" does it again; with none named and none remembered, the
remote is config.toml's [sync] remote (the store's, else yours), else Modal.

"sync ID" goes both ways, "sync push ID" only changes the remote, "sync pull ID" only this store. Each side is
compared with the state both last agreed on: a change moves to the side that lacks it, a file removed on a side
that had it is removed on the other, and only what changed moves (a grown transcript sends its new lines). An
agent's conversation both sides added to is joined line by line, every turn of both once, in time order; any other
file changed on both sides keeps the newer version at its name and the other beside it as
<name>.sessionfs-conflict-<time>, on both sides. Transcript folders made for other cwds are folded into the
session's canonical one. Files that hold credentials (the agents' logins, Claude's .claude.json, the files export
scrubs) stay where they are unless --with-credentials.

Over ssh, your own ssh client runs (its config, agent and known hosts apply; $SESSIONFS_SSH replaces the
command, as GIT_SSH_COMMAND does for git), with compression, and runs sessionfs on the other machine (on its
login's PATH, or $SESSIONFS_REMOTE_SESSIONFS), which serves the session beneath its folder, never following a
link. A machine without sessionfs can be reached through its sftp-server with --unconfined: it follows links, so
an agent there could redirect a write out of its session.

S3 credentials are read the AWS way: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or the shared credentials file
and AWS_PROFILE; AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL names a store other than AWS's. Modal's credentials:
MODAL_TOKEN_ID and MODAL_TOKEN_SECRET, or ~/.modal.toml.

A sync that is killed leaves every file whole, on both sides, and the next sync goes on from where it was.`,
		Example: `  sessionfs sync fix-login laptop:              # both ways, with the default store on host "laptop"
  sessionfs sync fix-login                       # again, with the remote it remembers
  sessionfs sync push fix-login s3://team-sessions/alice
  sessionfs sync pull fix-login ssh://me@build:2222/srv/sessionfs --dry-run
  sessionfs sync push fix-login modal`,
		Args:              cobra.RangeArgs(1, 3),
		ValidArgsFunction: a.completeSync,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := remote.Both
			verb := ""
			switch args[0] {
			case "push":
				dir, verb, args = remote.Push, "push", args[1:]
			case "pull":
				dir, verb, args = remote.Pull, "pull", args[1:]
			}
			if len(args) == 0 || len(args) > 2 {
				return usageError("sync: want [push|pull] ID [REMOTE]")
			}
			url := ""
			if len(args) == 2 {
				url = args[1]
			}
			return a.runSync(cmd.OutOrStdout(), verb, dir, args[0], url, remote.Options{DryRun: dryRun, WithCredentials: withCredentials}, unconfined)
		},
	}
	cmd.Flags().BoolVarP(&dryRun, "dry-run", "n", false, "say what would move, change nothing")
	cmd.Flags().BoolVar(&withCredentials, "with-credentials", false, "move the files that hold credentials too (never, by default)")
	cmd.Flags().BoolVar(&unconfined, "unconfined", false, "sync over ssh with a machine that lacks sessionfs, through its sftp-server, which follows links")
	return cmd
}

// runSync syncs session arg with url (the remembered remote, or Modal, when url is ""), as opt and dir say.
func (a *app) runSync(w io.Writer, verb string, dir remote.Direction, arg, url string, opt remote.Options, unconfined bool) error {
	s, m, err := a.session(arg)
	// A session this store has not seen yet comes in whole from a remote that has it: it is made here once the
	// remote is open and lists it.
	incoming := errors.Is(err, layout.ErrNotFound) && url != "" && url != "modal" && dir != remote.Push && !opt.DryRun
	if err != nil && !incoming {
		return err
	}
	notFound := err
	id := arg
	if !incoming {
		id = m.ID
	} else if err := layout.ValidateID(id); err != nil {
		return err
	}
	if url == "" {
		url = remote.Remembered(s, id)
	}
	if url == "" {
		c, err := config.Load(s.Root)
		if err != nil {
			return err
		}
		url = c.Sync.Remote
	}
	if url == "" || url == "modal" {
		if opt.DryRun || opt.WithCredentials {
			return usageError("sync: --dry-run and --with-credentials are not for Modal")
		}
		if verb == "" {
			verb = "push" // a push brings in the Volume's changes first
		}
		return runModalSync(w, verb, s, id)
	}
	ctx, stop := interruptible()
	defer stop()
	r, err := remote.Open(ctx, url, id)
	if err != nil {
		return err
	}
	defer r.Close()
	if sr, ok := r.(*remote.SSH); ok && !sr.Confined {
		if !unconfined {
			return fmt.Errorf("sessionfs is not installed on the other machine (not on its login's PATH, nor named by $SESSIONFS_REMOTE_SESSIONFS): only its sftp-server could serve the session there, and it follows links, so an agent there racing sync's checks could redirect a write out of its session; install sessionfs there, or pass --unconfined to accept that")
		}
		fmt.Fprintf(os.Stderr, "sessionfs: note: --unconfined: the other machine's sftp-server serves the session, following links\n")
	}
	if incoming {
		files, lerr := r.List(ctx)
		if lerr != nil {
			return lerr
		}
		if len(files) == 0 {
			return fmt.Errorf("%w (nor has %s)", notFound, url)
		}
		if s, err = a.openStore(); err != nil {
			return err
		}
		if m, err = s.Create(id, layout.CreateOptions{}); err != nil {
			return err
		}
	}
	opt.Direction = dir
	var finish func()
	if !opt.DryRun {
		opt.Progress, opt.Total, finish = transferBar("sync")
	}
	rep, err := remote.Sync(ctx, s, m.ID, r, opt)
	if finish != nil {
		finish()
	}
	if opt.DryRun {
		for _, line := range rep.Plan {
			fmt.Fprintln(w, line)
		}
		fmt.Fprintf(w, "would push %s (%s), pull %s (%s), remove %d there and %d here, join %s, settle %s\n",
			plural(rep.Pushed, "file"), humanize.IBytes(uint64(rep.BytesOut)), plural(rep.Pulled, "file"), humanize.IBytes(uint64(rep.BytesIn)),
			rep.RemovedThere, rep.RemovedHere, plural(rep.Joined, "conversation"), plural(rep.Conflicts, "conflict"))
		return err
	}
	if err == nil {
		if rerr := remote.Remember(s, m.ID, url); rerr != nil {
			return rerr
		}
	}
	fmt.Fprintf(w, "synced %s with %s: pushed %s (%s), pulled %s (%s), removed %d there and %d here, %s joined line by line, %s kept beside, %s folded\n",
		m.ID, url, plural(rep.Pushed, "file"), humanize.IBytes(uint64(rep.BytesOut)), plural(rep.Pulled, "file"), humanize.IBytes(uint64(rep.BytesIn)),
		rep.RemovedThere, rep.RemovedHere, plural(rep.Joined, "conversation"), plural(rep.Conflicts, "conflict"), plural(rep.Folded, "transcript folder"))
	if rep.Waiting > 0 {
		fmt.Fprintf(w, "%s changed on both sides: left until a sync both ways (sessionfs sync %s)\n", plural(rep.Waiting, "file"), m.ID)
	}
	return err
}

// runModalSync pushes session id of store s to its Modal Volume, or pulls the Volume's changes (verb: push or pull).
func runModalSync(w io.Writer, verb string, s *layout.Store, id string) error {
	c, err := modal.Connect()
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, stop := interruptible()
	defer stop()
	sy, err := modal.NewSyncer(ctx, c, s, id)
	if err != nil {
		return err
	}
	var finish func()
	sy.Progress, sy.Total, finish = transferBar(verb)
	defer finish()
	if verb == "push" {
		return syncPush(ctx, w, sy, id)
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
