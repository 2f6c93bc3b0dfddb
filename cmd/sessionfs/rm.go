package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/layout"
)

func (a *app) rmCmd() *cobra.Command {
	var force, asJSON bool
	cmd := &cobra.Command{
		Use:   "rm ID...",
		Short: "Move sessions to the trash (trash restore brings one back; gc --trash deletes them for good)",
		Long: `rm moves each session, whole, to the store's trash. A session something runs in (exec, run or resume, on
any host sharing the store) is refused, naming the runner, unless --force: the run would go on in the trash
and its record with it.`,
		Example: `  sessionfs rm fix-login old-experiment
  sessionfs trash restore fix-login   # changed your mind
  sessionfs gc --trash                # later, to free the space`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: a.completeManyIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := a.openStore()
			if err != nil {
				return err
			}
			var errs []error
			removed := []map[string]string{}
			for _, arg := range args {
				id, err := a.exactID(arg)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				// The run lease keeps runners out while the session goes, and refuses one that runs.
				lease, err := s.TryLease(id, layout.ThisProcess())
				if err != nil && !(force && errors.Is(err, layout.ErrRunning)) {
					if errors.Is(err, layout.ErrRunning) {
						err = fmt.Errorf("%w (--force removes it all the same)", err)
					}
					errs = append(errs, err)
					continue
				}
				dst, err := s.Remove(id)
				if lease != nil {
					_ = lease.Release()
				}
				if err != nil {
					errs = append(errs, err)
					continue
				}
				removed = append(removed, map[string]string{"session": id, "trash": dst})
				if !asJSON {
					fmt.Fprintf(cmd.OutOrStdout(), "%s -> %s\n", id, dst)
				}
			}
			if asJSON {
				if err := printJSON(cmd.OutOrStdout(), removed); err != nil {
					return err
				}
			}
			if len(errs) > 1 {
				// One line each: main prints a single line.
				for _, err := range errs[:len(errs)-1] {
					fmt.Fprintln(cmd.ErrOrStderr(), "sessionfs: "+oneLine(err.Error()))
				}
			}
			if len(errs) > 0 {
				return errs[len(errs)-1]
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "remove a session even while something runs in it")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was moved where as JSON")
	return cmd
}

func (a *app) gcCmd() *cobra.Command {
	var opts layout.GCOptions
	var idle idleFlag
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Empty the trash and/or trash sessions idle for longer than --idle",
		Long: `gc deletes for good only what you ask: --trash empties the trash (sessions removed with rm or
rm -rf through the mount); --idle D first moves sessions with no activity for D into the trash.`,
		Example: `  sessionfs gc --trash
  sessionfs gc --idle 720h --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !opts.Trash && idle == 0 {
				return errors.New("gc: say what to collect: --trash, --idle DURATION, or both")
			}
			s, err := a.openStore()
			if err != nil {
				return err
			}
			opts.IdleFor = time.Duration(idle)
			prefix := ""
			if opts.DryRun {
				prefix = "would "
			}
			var freed int64
			type action struct {
				Action string `json:"action"`
				Path   string `json:"path"`
				Bytes  int64  `json:"bytes"`
			}
			actions := []action{}
			opts.OnRemoved = func(what, path string, size int64) {
				if what == "delete" {
					freed += size
				}
				actions = append(actions, action{what, path, size})
				if !asJSON {
					fmt.Fprintf(cmd.OutOrStdout(), "%s%s %s (%s)\n", prefix, what, path, humanize.IBytes(uint64(size)))
				}
			}
			if err := s.GC(opts); err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"dry_run": opts.DryRun, "actions": actions, "freed_bytes": freed})
			}
			if opts.Trash {
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", map[bool]string{true: "would free", false: "freed"}[opts.DryRun], humanize.IBytes(uint64(freed)))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&opts.Trash, "trash", false, "delete everything in the trash")
	cmd.Flags().Var(&idle, "idle", "move sessions idle for longer than this to the trash (e.g. 30d, 12h, 90m)")
	cmd.Flags().BoolVarP(&opts.DryRun, "dry-run", "n", false, "say what would be done, do nothing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the actions and the bytes freed as JSON")
	return cmd
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
