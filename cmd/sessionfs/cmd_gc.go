package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/layout"
)

// gcOptions are gc's flags.
type gcOptions struct {
	layout.GCOptions
	idle idleFlag
	json bool
}

func (a *app) gcCmd() *cobra.Command {
	var o gcOptions
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Empty the trash and/or trash sessions idle for longer than --idle",
		Long: `gc deletes for good only what you ask: --trash empties the trash (sessions removed with rm or
rm -rf through the mount); --idle D first moves sessions with no activity for D into the trash.`,
		Example: `  sessionfs gc --trash
  sessionfs gc --idle 720h --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !o.Trash && o.idle == 0 {
				return errors.New("gc: say what to collect: --trash, --idle DURATION, or both")
			}
			return a.runGC(cmd.OutOrStdout(), o)
		},
	}
	cmd.Flags().BoolVar(&o.Trash, "trash", false, "delete everything in the trash")
	cmd.Flags().Var(&o.idle, "idle", "move sessions idle for longer than this to the trash (e.g. 30d, 12h, 90m)")
	cmd.Flags().BoolVarP(&o.DryRun, "dry-run", "n", false, "say what would be done, do nothing")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the actions and the bytes freed as JSON")
	return cmd
}

// gcAction is one thing gc did (or would do), as gc --json prints it.
type gcAction struct {
	Action string `json:"action"`
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
}

// runGC collects what o asks, printing each action as it is done (or, with --json, all of them at the end).
func (a *app) runGC(w io.Writer, o gcOptions) error {
	s, err := a.openStore()
	if err != nil {
		return err
	}
	opts := o.GCOptions
	opts.IdleFor = time.Duration(o.idle)
	prefix := ""
	if opts.DryRun {
		prefix = "would "
	}
	var freed int64
	actions := []gcAction{}
	opts.OnRemoved = func(what, path string, size int64) {
		if what == "delete" {
			freed += size
		}
		actions = append(actions, gcAction{what, path, size})
		if !o.json {
			fmt.Fprintf(w, "%s%s %s (%s)\n", prefix, what, path, humanize.IBytes(uint64(size)))
		}
	}
	if err := s.GC(opts); err != nil {
		return err
	}
	if o.json {
		return printJSON(w, map[string]any{"dry_run": opts.DryRun, "actions": actions, "freed_bytes": freed})
	}
	if len(actions) == 0 {
		fmt.Fprintln(w, nothingToCollect(opts))
		return nil
	}
	if opts.Trash {
		fmt.Fprintf(w, "%s %s\n", map[bool]string{true: "would free", false: "freed"}[opts.DryRun], humanize.IBytes(uint64(freed)))
	}
	return nil
}

// nothingToCollect says that gc found nothing opts asks for, naming each thing it looked for.
func nothingToCollect(opts layout.GCOptions) string {
	var why []string
	if opts.IdleFor > 0 {
		why = append(why, "no session idle for longer than "+fmtIdle(opts.IdleFor))
	}
	if opts.Trash {
		why = append(why, "the trash is empty")
	}
	return "nothing to collect: " + strings.Join(why, ", and ")
}

// fmtIdle says an idle time in days when it is whole days (30d), else as Go does (36h0m0s).
func fmtIdle(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

// idleFlag is a positive duration that also takes days ("30d", "1d12h"), as people say idle times.
type idleFlag time.Duration

func (f *idleFlag) String() string {
	if *f == 0 {
		return "0"
	}
	return time.Duration(*f).String()
}

func (f *idleFlag) Type() string { return "duration" }

func (f *idleFlag) Set(s string) error {
	var days int64
	rest := s
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil {
			return fmt.Errorf("%q: want a duration such as 30d, 12h or 1d12h", s)
		}
		days, rest = n, s[i+1:]
	}
	var d time.Duration
	if rest != "" {
		var err error
		if d, err = time.ParseDuration(rest); err != nil {
			return fmt.Errorf("%q: want a duration such as 30d, 12h or 1d12h", s)
		}
	}
	if days < 0 || d < 0 || days > 100*365 {
		return fmt.Errorf("%q: want a positive duration", s)
	}
	total := time.Duration(days)*24*time.Hour + d
	if total <= 0 {
		return fmt.Errorf("%q: want a positive duration", s)
	}
	*f = idleFlag(total)
	return nil
}
