package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func (a *app) runsCmd() *cobra.Command {
	var asJSON bool
	var format string
	cmd := &cobra.Command{
		Use:   "runs ID",
		Short: "List a session's runs (exec, run, resume): name, start, backend, duration, exit code, command",
		Long: `runs lists what exec, run and resume ran in the session, oldest first, as session.json records them. A run
whose end was never recorded shows "running" while its runner holds the session's run lease, "unfinished" when
that runner died first. Each run is named SESSION/N (N its number in the session), the name ps shows and logs
takes.`,
		Example: `  sessionfs runs fix-login
  sessionfs runs fix-login --json | jq '.[-1].exit_code'`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON && format != "" {
				return usageError("runs: --json and --format exclude each other")
			}
			return a.runRuns(cmd.OutOrStdout(), args[0], asJSON, format)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&format, "format", "", formatHelp("{{.Status}} {{.Backend}}", "{{.ExitCode}}"))
	return cmd
}

// runRuns prints session arg's runs: as JSON, through a --format template, or as a table.
func (a *app) runRuns(w io.Writer, arg string, asJSON bool, format string) error {
	s, m, err := a.session(arg)
	if err != nil {
		return err
	}
	runs := runsOf(m, s.Running(m.ID))
	if asJSON {
		return printJSON(w, runs)
	}
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
	return printRunsTable(w, runs)
}

// printRunsTable prints runs one a line: start, backend, duration, exit code and command (after its image).
func printRunsTable(w io.Writer, runs []runJSON) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTARTED\tBACKEND\tDURATION\tEXIT\tCOMMAND")
	for _, r := range runs {
		dur, exit := r.Status, "-" // running, or unfinished: its runner died before recording the end
		if r.End != nil {
			dur, exit = r.End.Sub(r.Start).Round(time.Millisecond).String(), fmt.Sprint(*r.ExitCode)
		}
		if r.Imported {
			exit += " (imported)"
		}
		what := strings.Join(r.Command, " ")
		if r.Image != "" {
			what = r.Image + ": " + what
		}
		if r.Error != nil {
			what += " (" + *r.Error + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Start.Local().Format(time.DateTime), truncate(r.Backend, 12), dur, exit,
			truncate(what, 80))
	}
	return tw.Flush()
}
