package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/mount"
)

func unmountCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "unmount [MOUNTPOINT]",
		Aliases: []string{"umount"},
		Short:   "Unmount a sessionfs mount (default ~/agent-sessions), stale ones included",
		Example: `  sessionfs unmount
  sessionfs unmount /mnt/sessions`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mnt := defaultMountpoint()
			if len(args) == 1 {
				mnt = args[0]
			}
			err := mount.Unmount(mnt)
			if errors.Is(err, mount.ErrBusy) {
				fmt.Fprintln(cmd.ErrOrStderr(), "sessionfs: note: "+err.Error())
				return nil
			}
			return err
		},
	}
}
