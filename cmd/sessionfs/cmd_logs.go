package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sessionfs/sessionfs/agents/text"
	"github.com/sessionfs/sessionfs/layout"
)

// followPoll is how often logs -f looks for more output, and whether the run has ended.
const followPoll = 200 * time.Millisecond

func (a *app) logsCmd() *cobra.Command {
	var follow, raw bool
	var tailFlag string
	cmd := &cobra.Command{
		Use:   "logs RUN",
		Short: "Print what a run printed (its stdout and stderr), as docker logs does",
		Long: fmt.Sprintf(`logs prints what a run of exec, run or resume printed, stdout and stderr as they came. RUN is SESSION/N as
runs and ps name it (N the run's number in its session), or SESSION alone for its latest run.

The output is kept in the store, beside the session and beyond its processes' reach (<store>/logs/SESSION/N.log),
capped at %d MiB a run: past the cap the oldest part is dropped, so the log keeps the end of the output. A
stream that went to a terminal (a run with -t, exec's command printing to your terminal) was the command's to
draw on and is not kept: redirect or pipe a run's output to keep it. The logs go with their session: moved by
rename, to the trash by rm, deleted by gc.

What a run printed is its session's to write, escape sequences included (a clipboard written with OSC 52, a
retitled window, a cleared screen). On a terminal, logs shows every control character but newline and tab as
text (\x1b for ESC), as log does; piped or redirected, the bytes go out as they are. --raw sends them as they
are to a terminal too.

Not to be confused with "sessionfs log", which prints a conversation: what was said to an agent and what it did.`, layout.DefaultLogCap>>20),
		Example: `  sessionfs logs fix-login
  sessionfs logs fix-login/3 --tail 20
  sessionfs logs -f fix-login
  sessionfs logs --raw fix-login   # the escape sequences too, to redraw what a run drew`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			tail := -1 // all
			if tailFlag != "all" {
				n, err := strconv.Atoi(tailFlag)
				if err != nil || n < 0 {
					return usageError(fmt.Sprintf("logs: --tail takes a number of lines, 0 or more, or all (not %q)", tailFlag))
				}
				tail = n
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			w := cmd.OutOrStdout()
			if f, ok := w.(*os.File); ok && !raw && term.IsTerminal(int(f.Fd())) {
				safe := text.NewSafeWriter(w)
				defer safe.Close()
				w = safe
			}
			return a.runLogs(ctx, w, args[0], follow, tail)
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "go on printing while the run is in progress")
	cmd.Flags().BoolVar(&raw, "raw", false, "send the output's control characters to a terminal as they are (escape sequences included)")
	cmd.Flags().StringVarP(&tailFlag, "tail", "n", "all", "print only the last N lines, as docker logs --tail")
	return cmd
}

// runLogs prints run arg's log: its last tail lines (-1: all), then, with follow, what comes until the run ends.
func (a *app) runLogs(ctx context.Context, w io.Writer, arg string, follow bool, tail int) error {
	sess, n, err := layout.ParseRunID(arg)
	if err != nil {
		return usageError(err.Error())
	}
	s, m, err := a.session(sess)
	if err != nil {
		return err
	}
	i, ok := len(m.Runs)-1, len(m.Runs) > 0
	if n > 0 {
		i, ok = m.RunIndex(n)
	}
	switch {
	case !ok && len(m.Runs) == 0:
		return fmt.Errorf("session %s has not run anything yet (sessionfs exec %s CMD runs something)", m.ID, m.ID)
	case !ok:
		return fmt.Errorf("session %s has no run %s (sessionfs runs %s lists them)", m.ID, arg, m.ID)
	}
	n = m.RunNumber(i)
	old, cur, err := s.OpenRunLog(m.ID, n)
	if errors.Is(err, layout.ErrNoLog) && m.Runs[i].Imported {
		return fmt.Errorf("no output kept for run %s: it came in an archive (sessionfs import), and what it printed stayed with the store it ran for%s", layout.RunID(m.ID, n), onHost(m.Runs[i].Host))
	}
	if errors.Is(err, layout.ErrNoLog) {
		return fmt.Errorf("no output kept for run %s: what goes to a terminal is not kept (run -t, or exec printing to your terminal), nor was a run's before sessionfs kept logs; redirect or pipe the output to keep it", layout.RunID(m.ID, n))
	}
	if err != nil {
		return err
	}
	defer func() { cur.Close() }()
	if err := printStart(w, old, cur, tail); err != nil {
		return err
	}
	if !follow {
		return nil
	}
	return followLog(ctx, w, s, m.ID, n, m.Runs[i].Start, &cur)
}

// printStart prints the log so far, old part first, or its last tail lines; cur is left at its end.
func printStart(w io.Writer, old, cur *os.File, tail int) error {
	if old != nil {
		defer old.Close()
	}
	if tail < 0 {
		for _, f := range []*os.File{old, cur} {
			if f == nil {
				continue
			}
			if _, err := io.Copy(w, f); err != nil {
				return err
			}
		}
		return nil
	}
	var buf []byte
	for _, f := range []*os.File{old, cur} {
		if f == nil {
			continue
		}
		b, err := io.ReadAll(f)
		if err != nil {
			return err
		}
		buf = append(buf, b...)
	}
	_, err := w.Write(lastLines(buf, tail))
	return err
}

// lastLines is the last n lines of b (a last line with no newline counts).
func lastLines(b []byte, n int) []byte {
	if n == 0 {
		return nil
	}
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	for i := end; i > 0; i-- {
		if b[i-1] == '\n' {
			if n--; n == 0 {
				return b[i:]
			}
		}
	}
	return b
}

// followLog prints what run n of session id adds to its log (cur, the part being written, at the offset printed)
// until the run ends (its record gets an end, or its runner is gone) or ctx ends; a rotated part is drained and
// the new part opened.
func followLog(ctx context.Context, w io.Writer, s *layout.Store, id string, n int, start time.Time, cur **os.File) error {
	for {
		ended := !inProgress(s, id, n, start) // before draining: what the run printed last is then in the file
		if _, err := io.Copy(w, *cur); err != nil {
			return err
		}
		if s.RunLogRotated(id, n, *cur) {
			if _, err := io.Copy(w, *cur); err != nil { // what was written before the rotation
				return err
			}
			old, next, err := s.OpenRunLog(id, n)
			if err != nil {
				return err
			}
			if old != nil {
				old.Close()
			}
			(*cur).Close()
			*cur = next
			continue
		}
		if ended {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followPoll):
		}
	}
}

// inProgress reports whether run n of session id, which started at start, has not ended: its record has no end
// and its session's runner is alive.
func inProgress(s *layout.Store, id string, n int, start time.Time) bool {
	m, err := s.Get(id)
	if err != nil {
		return false
	}
	i, ok := m.RunIndex(n)
	return ok && m.Runs[i].End.IsZero() && m.Runs[i].Start.Equal(start) && s.Running(id)
}

// onHost is " on HOST" for a run's recorded host, "" when none was.
func onHost(host string) string {
	if host == "" {
		return ""
	}
	return " on " + host
}
