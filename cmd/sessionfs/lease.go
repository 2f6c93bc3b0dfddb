package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/layout"
)

// leasePoll is how often --wait tries the lease again.
const leasePoll = 250 * time.Millisecond

// waitFlag gives a command that runs something in a session (exec, run, resume) the --wait flag.
func (a *app) waitFlag(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&a.wait, "wait", false, "when another runner (on any host sharing the store) has the session, wait for it instead of failing")
}

// lockSession takes the session's run lease, unless this process holds it already: one runner per session,
// across every host that shares the store. Commands take it before they touch the session (seeding its
// .claude), so a refused runner changes nothing under the holder's feet. Without --wait a held lease fails at
// once, naming its holder; with it, the wait is said once on stderr. ctx ends the wait.
func (a *app) lockSession(ctx context.Context, s *layout.Store, id string) error {
	if a.lease != nil {
		return nil
	}
	l, err := s.Lease(ctx, id, layout.ThisProcess(), a.wait, leasePoll, func(re *layout.RunningError) {
		fmt.Fprintf(os.Stderr, "sessionfs: %s; waiting for it\n", re)
	})
	if errors.Is(err, layout.ErrRunning) {
		return fmt.Errorf("%w (--wait waits for it)", err)
	}
	a.lease = l
	return err
}

// unlockSession gives the lease back (a process that dies gives it back with its descriptors).
func (a *app) unlockSession() {
	_ = a.lease.Release()
	a.lease = nil
}
