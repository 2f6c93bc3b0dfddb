package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/mount"
)

func (a *app) rmCmd() *cobra.Command {
	var force, asJSON bool
	cmd := &cobra.Command{
		Use:   "rm ID...",
		Short: "Move sessions to the trash (trash restore brings one back; gc --trash deletes them for good)",
		Long: `rm moves each session, whole, to the store's trash. A session something runs in (exec, run or resume, on
any host sharing the store) is refused, naming the runner, unless --force: the run would go on in the trash
and its record with it. So is a session a process uses through the mount on this host (a shell whose working
folder is in it, a file open in it, a container started by hand with -v <mount>/sessions/ID:/session), naming
the processes: removed, the session's folder would be emptied under them.`,
		Example: `  sessionfs rm fix-login old-experiment
  sessionfs trash restore fix-login   # changed your mind
  sessionfs gc --trash                # later, to free the space`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: a.completeManyIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runRm(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, force, asJSON)
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "remove a session even while something runs in it or uses it through the mount")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was moved where as JSON")
	return cmd
}

// runRm moves each session of args to the trash, going on past those it cannot remove.
func (a *app) runRm(w, errOut io.Writer, args []string, force, asJSON bool) error {
	s, err := a.openStore()
	if err != nil {
		return err
	}
	var errs []error
	removed := []map[string]string{}
	for _, arg := range args {
		id, dst, err := a.removeSession(s, arg, force)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, map[string]string{"session": id, "trash": dst})
		if !asJSON {
			fmt.Fprintf(w, "%s -> %s\n", id, dst)
		}
	}
	if asJSON {
		if err := printJSON(w, removed); err != nil {
			return err
		}
	}
	return lastError(errOut, errs)
}

// removeSession moves session arg (its whole id) to the trash, refused while something runs in it unless force.
func (a *app) removeSession(s *layout.Store, arg string, force bool) (id, trashed string, err error) {
	if id, err = a.exactID(arg); err != nil {
		return "", "", err
	}
	if !force && !s.Running(id) { // a run's own processes are told by its lease, below
		if users := mount.SessionUsers(s.Root, id); len(users) > 0 {
			return id, "", fmt.Errorf("session %s is in use through the mount by %s: removed, its folder would be emptied under them (--force removes it all the same)",
				id, strings.Join(users, ", "))
		}
	}
	trashed, err = s.RemoveIdle(id, force)
	if errors.Is(err, layout.ErrRunning) {
		err = fmt.Errorf("%w (--force removes it all the same)", err)
	}
	return id, trashed, err
}

// lastError prints every error of errs but the last on errOut, one line each, and returns the last (main prints
// one line), nil for none.
func lastError(errOut io.Writer, errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	for _, err := range errs[:len(errs)-1] {
		fmt.Fprintln(errOut, "sessionfs: "+oneLine(err.Error()))
	}
	return errs[len(errs)-1]
}
