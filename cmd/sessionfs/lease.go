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

// takeLease takes the session's run lease: one runner per session, across every host that shares the store.
// Without --wait a held lease fails at once, naming its holder; with it, the wait is said once on stderr.
func (a *app) takeLease(ctx context.Context, s *layout.Store, id string) (*layout.Lease, error) {
	l, err := s.Lease(ctx, id, layout.ThisProcess(), a.wait, leasePoll, func(re *layout.RunningError) {
		fmt.Fprintf(os.Stderr, "sessionfs: %s; waiting for it\n", re)
	})
	if errors.Is(err, layout.ErrRunning) {
		return nil, fmt.Errorf("%w (--wait waits for it)", err)
	}
	return l, err
}
