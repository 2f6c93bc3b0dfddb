package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/layout"
)

func (a *app) psCmd() *cobra.Command {
	var all, asJSON, quiet bool
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List the runs in progress across sessions (exec, run, resume): run, backend, host, since, command",
		Long: `ps lists what exec, run and resume are running now, in every session of the store, as docker ps lists
containers. A run is named SESSION/N, N its number in its session (runs shows the same names); "sessionfs logs
SESSION/N" prints what it printed. A run is in progress while its runner holds the session's run lease: on this
host its process is alive, on another host (a shared store) its lease record is taken at its word.

With -a, ps lists every recorded run of every session, newest first, with its status: "running", "exited N"
(N its exit code), or "unfinished" (its runner died before it recorded the end). ps reads only the lease records
and the session.json of the sessions running something; -a reads every session's.`,
		Example: `  sessionfs ps
  sessionfs ps -a
  sessionfs ps -q | xargs -n1 sessionfs logs --tail 5
  sessionfs ps --json | jq -r '.[].id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON && quiet {
				return usageError("ps: --json and --quiet exclude each other")
			}
			return a.runPs(cmd.OutOrStdout(), all, asJSON, quiet)
		},
	}
	cmd.Flags().BoolVarP(&all, "all", "a", false, "list ended runs too, newest first, with their exit codes")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the runs' names (SESSION/N)")
	return cmd
}

// psRun is a run as ps shows it: a run as runs shows it, with its session, its runner's host, and its pid while
// it runs (null otherwise).
type psRun struct {
	runJSON
	Session string `json:"session"`
	Host    string `json:"host"`
	PID     *int   `json:"pid"`
}

// runPs prints the runs in progress, or with all every recorded run, newest first.
func (a *app) runPs(w io.Writer, all, asJSON, quiet bool) error {
	s, err := a.openStore()
	if errors.Is(err, errNoStore) && a.defaultStore() {
		return printPs(w, nil, asJSON, quiet) // a fresh machine runs nothing yet
	}
	if err != nil {
		return err
	}
	active, err := s.ActiveRuns()
	if err != nil {
		return err
	}
	var runs []psRun
	if !all {
		for _, r := range slices.Backward(active) {
			runs = append(runs, psRunOf(r.ID, r.N, r.Run, &r.Holder))
		}
		return printPs(w, runs, asJSON, quiet)
	}
	holders := map[string]*layout.Holder{} // SESSION/N of the runs in progress
	for _, r := range active {
		holders[layout.RunID(r.ID, r.N)] = &r.Holder
	}
	ids, err := s.IDs()
	if err != nil {
		return err
	}
	for _, id := range ids {
		m, err := s.Get(id)
		if err != nil {
			continue // damaged: ls and show say so
		}
		for i, r := range m.Runs {
			runs = append(runs, psRunOf(id, m.RunNumber(i), r, holders[layout.RunID(id, m.RunNumber(i))]))
		}
	}
	slices.SortStableFunc(runs, func(x, y psRun) int { return y.Start.Compare(x.Start) })
	return printPs(w, runs, asJSON, quiet)
}

// psRunOf is run n of session id as ps shows it; h is its runner when it is in progress.
func psRunOf(id string, n int, r layout.Run, h *layout.Holder) psRun {
	p := psRun{runJSON: runOf(id, n, r, h != nil), Session: id, Host: r.Host}
	if h != nil && r.End.IsZero() {
		pid := h.PID
		p.PID = &pid
		if p.Host == "" {
			p.Host = h.Host
		}
	}
	return p
}

func printPs(w io.Writer, runs []psRun, asJSON, quiet bool) error {
	switch {
	case asJSON:
		return printJSON(w, orEmpty(runs))
	case quiet:
		for _, r := range runs {
			fmt.Fprintln(w, r.ID)
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tBACKEND\tHOST\tSTARTED\tSTATUS\tCOMMAND")
	for _, r := range runs {
		status := r.Status
		if r.ExitCode != nil {
			status = fmt.Sprintf("exited %d", *r.ExitCode)
		}
		what := strings.Join(r.Command, " ")
		if r.Image != "" {
			what = r.Image + ": " + what
		}
		if r.Imported {
			status += " (imported)"
		}
		host := r.Host
		if host == "" {
			host = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, truncate(r.Backend, 12), truncate(host, 24), ago(r.Start),
			status, truncate(what, 60))
	}
	return tw.Flush()
}
