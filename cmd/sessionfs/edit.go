package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/layout"
)

func (a *app) labelCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "label ID KEY=VALUE|KEY-...",
		Short: "Set (KEY=VALUE) or remove (KEY-) a session's labels",
		Long:  "label sets or removes labels, as kubectl label does. Labels follow Kubernetes' rule: " + layout.LabelRule + ".",
		Example: `  sessionfs label fix-login team=web stage=review
  sessionfs label fix-login stage-`,
		Args:              cobra.MinimumNArgs(2),
		ValidArgsFunction: a.completeLabels,
		RunE: func(cmd *cobra.Command, args []string) error {
			set, unset, err := parseLabelEdits(args[1:])
			if err != nil {
				return err
			}
			id, err := a.exactID(args[0])
			if err != nil {
				return err
			}
			m, err := a.store.Update(id, func(m *layout.Meta) error {
				if m.Labels == nil {
					m.Labels = map[string]string{}
				}
				for _, k := range unset {
					delete(m.Labels, k)
				}
				for k, v := range set {
					if _, ok := m.Labels[k]; !ok && len(m.Labels) >= layout.MaxLabels {
						return fmt.Errorf("label %s: a session has at most %d labels", id, layout.MaxLabels)
					}
					m.Labels[k] = v
				}
				if len(m.Labels) == 0 {
					m.Labels = nil
				}
				return nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", m.ID, labelText(m.Labels))
			return nil
		},
	}
}

// parseLabelEdits reads label's arguments: KEY=VALUE sets, KEY- removes, as kubectl label does.
func parseLabelEdits(args []string) (set map[string]string, unset []string, err error) {
	set = map[string]string{}
	for _, arg := range args {
		if k, ok := strings.CutSuffix(arg, "-"); ok && k != "" && !strings.Contains(k, "=") {
			unset = append(unset, k) // any key may go, one set before the rule included
			continue
		}
		k, v, ok := strings.Cut(arg, "=")
		if !ok || k == "" {
			return nil, nil, usageError(fmt.Sprintf("label: %q: want KEY=VALUE to set, KEY- to remove", arg))
		}
		if err := layout.ValidateLabel(k, v); err != nil {
			return nil, nil, usageError(err.Error())
		}
		set[k] = v
	}
	return set, unset, nil
}

func (a *app) renameCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rename OLD NEW",
		Short: "Rename a session (refused while something runs in it)",
		Long: `rename gives session OLD the id NEW: its folder is renamed in the store, nothing else changes. A
session's id is in the binds of the containers running in it and in the cwd of its processes: a session that
exec, run or resume runs in is refused (its run lease is held). Processes started in it otherwise (a shell
that ran eval "$(sessionfs env ID)") keep the old path. NEW must be a free, valid id.`,
		Example: `  sessionfs rename 20261122-093000-1a2b3c fix-login`,
		Args:    cobra.ExactArgs(2),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp // a new id: nothing to offer
			}
			return a.completeIDs(cmd, args, prefix)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := a.exactID(args[0])
			if err != nil {
				return err
			}
			// The run lease keeps runners out while the folder changes name, and refuses a running session.
			lease, err := a.store.TryLease(id, layout.ThisProcess())
			if err != nil {
				return err
			}
			defer lease.Release()
			if err := a.store.Rename(id, args[1]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s -> %s\n", id, args[1])
			return nil
		},
	}
}

func (a *app) runsCmd() *cobra.Command {
	var asJSON bool
	var format string
	cmd := &cobra.Command{
		Use:   "runs ID",
		Short: "List a session's runs (exec, run, resume): start, backend, duration, exit code, command",
		Long: `runs lists what exec, run and resume ran in the session, oldest first, as session.json records them. A run
whose end was never recorded shows "running" while its runner holds the session's run lease, "unfinished" when
that runner died first.`,
		Example: `  sessionfs runs fix-login
  sessionfs runs fix-login --json | jq '.[-1].exit_code'`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON && format != "" {
				return usageError("runs: --json and --format exclude each other")
			}
			s, m, err := a.session(args[0])
			if err != nil {
				return err
			}
			runs := runsOf(m.Runs, runningNow(s, m.ID))
			if asJSON {
				return printJSON(cmd.OutOrStdout(), runs)
			}
			w := cmd.OutOrStdout()
			if format != "" {
				tmpl, err := parseFormat("runs", format)
				if err != nil {
					return err
				}
				for _, r := range runs {
					if err := printFormatted(w, tmpl, r); err != nil {
						return err
					}
				}
				return nil
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "STARTED\tBACKEND\tDURATION\tEXIT\tCOMMAND")
			for _, r := range runs {
				dur, exit := r.Status, "-" // running, or unfinished: its runner died before recording the end
				if r.End != nil {
					dur, exit = r.End.Sub(r.Start).Round(time.Millisecond).String(), fmt.Sprint(*r.ExitCode)
				}
				what := strings.Join(r.Command, " ")
				if r.Image != "" {
					what = r.Image + ": " + what
				}
				if r.Error != nil {
					what += " (" + *r.Error + ")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Start.Local().Format(time.DateTime), r.Backend, dur, exit,
					truncate(what, 80))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&format, "format", "", formatHelp("{{.Status}} {{.Backend}}", "{{.ExitCode}}"))
	return cmd
}

// runJSON is a run as runs --json and --format show it: every key present, null where unknown.
type runJSON struct {
	Backend string     `json:"backend"`
	Image   string     `json:"image"`
	Command []string   `json:"command"`
	Start   time.Time  `json:"start"`
	End     *time.Time `json:"end"`
	// Status is "exited" (its end is recorded), "running" (its runner holds the session), or "unfinished" (the
	// runner died before it recorded the end: killed, or its host went down).
	Status   string  `json:"status"`
	ExitCode *int    `json:"exit_code"` // null until it exited
	Error    *string `json:"error"`     // sessionfs's own failure, if any
}

// runsOf turns session.json's runs into what runs prints; running says the session's runner is alive.
func runsOf(rs []layout.Run, running bool) []runJSON {
	out := make([]runJSON, 0, len(rs))
	for i, r := range rs {
		j := runJSON{Backend: r.Backend, Image: r.Image, Command: orEmpty(r.Command), Start: r.Start, Status: "unfinished"}
		if i == len(rs)-1 && running {
			j.Status = "running"
		}
		if !r.End.IsZero() {
			end, code := r.End, r.ExitCode
			j.End, j.ExitCode, j.Status = &end, &code, "exited"
		}
		if r.Error != "" {
			e := r.Error
			j.Error = &e
		}
		out = append(out, j)
	}
	return out
}

// runningNow reports whether a runner holds session id's lease: its record names one, alive if on this host.
func runningNow(s *layout.Store, id string) bool {
	h := s.LeaseHolder(id)
	if h == nil {
		return false
	}
	if host, _ := os.Hostname(); h.Host == host && h.PID > 0 {
		return syscall.Kill(h.PID, 0) == nil || errors.Is(syscall.Kill(h.PID, 0), syscall.EPERM)
	}
	return true
}
