package backends

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/sessionfs/sessionfs/layout"
)

// OwnFailure is the exit code of a run whose backend failed before or around its command (an unreachable engine,
// a sync that failed), as docker run gives its own failures: the command's own codes stay its own.
const OwnFailure = 125

// leasePoll is how often a runner that waits tries the lease again.
const leasePoll = 250 * time.Millisecond

// A Runner holds a session's run lease: one runner per session, on every host that shares the store (exec, run
// and resume alike). A command takes it before it touches the session (seeding its .claude), so a refused runner
// changes nothing under the holder's feet; a process that dies gives it back with its descriptors.
type Runner struct {
	store *layout.Store
	id    string
	lease *layout.Lease
	// Warn is told what goes wrong around a run without stopping it (its record in session.json unwritten); nil:
	// nobody is told.
	Warn func(error)
}

// Lease takes session id's run lease. A lease another runner holds fails at once, naming its holder (a
// *layout.RunningError, layout.ErrRunning), unless wait: then waiting is told once whom it waits for, and ctx
// ends the wait.
func Lease(ctx context.Context, s *layout.Store, id string, wait bool, waiting func(*layout.RunningError)) (*Runner, error) {
	l, err := s.Lease(ctx, id, layout.ThisProcess(), wait, leasePoll, waiting)
	if err != nil {
		return nil, err
	}
	return &Runner{store: s, id: id, lease: l}, nil
}

// Release gives the lease back.
func (r *Runner) Release() error { return r.lease.Release() }

// Run runs spec with b in the runner's session (spec's SessionID and Folder are filled in: the session's folder in
// the store, open for the run) and records the run in session.json: first in progress (no end), numbered, which
// "sessionfs runs" and "ps" show, then with its end. What the command prints is kept in the run's log (keepLog),
// within the store's cap. image is the image recorded (docker, modal). The exit code is the command's, or
// OwnFailure when the backend failed before or around it; err says what failed. Cancelling ctx stops the command.
func (r *Runner) Run(ctx context.Context, b Backend, spec Spec, image string) (int, error) {
	folder, err := r.store.OpenSession(r.id)
	if err != nil {
		return OwnFailure, err
	}
	defer folder.Close()
	spec.SessionID, spec.Folder = r.id, folder
	run := layout.Run{Backend: b.Name(), Host: layout.ThisProcess().Host, Image: image, Command: spec.Argv,
		Start: time.Now().UTC()}
	r.record(&run)
	if log := r.keepLog(&spec, folder, run.N); log != nil {
		defer log.Close()
	}
	turn := turnTrace(folder, spec.Argv)
	code, err := b.Run(ctx, spec)
	if code < 0 {
		code = OwnFailure
	}
	if code == 0 && err == nil {
		if err = turn.lost(folder, r.id); err != nil {
			code = OwnFailure
		}
	}
	run.End, run.ExitCode = time.Now().UTC(), code
	if err != nil {
		run.Error = err.Error()
	}
	r.record(&run)
	return code, err
}

// keepLog tees spec's stdout and stderr into run n's log, in the store beyond the session's reach, owned like the
// session. A stream that is a terminal, and every stream of a TTY run, passes straight through and is not kept:
// the command must see the terminal itself (a TUI, a prompt). nil when nothing is kept.
func (r *Runner) keepLog(spec *Spec, folder *layout.Dir, n int) *layout.RunLog {
	keep := func(w io.Writer) bool { return w != nil && !spec.TTY && !isTerminal(w) }
	if n <= 0 || (!keep(spec.Stdout) && !keep(spec.Stderr)) {
		return nil
	}
	uid, gid, err := folder.Owner()
	if err != nil {
		uid, gid = -1, -1
	}
	log, err := r.store.CreateRunLog(r.id, n, uid, gid, 0)
	if err != nil {
		if r.Warn != nil {
			r.Warn(fmt.Errorf("the run's output is not kept: %w", err))
		}
		return nil
	}
	same := sameFile(spec.Stdout, spec.Stderr)
	if keep(spec.Stdout) {
		spec.Stdout = tee{spec.Stdout, log}
	}
	if same {
		// One writer for both (`> out 2>&1`): the command gets one pipe, and its lines keep their order.
		spec.Stderr = spec.Stdout
	} else if keep(spec.Stderr) {
		spec.Stderr = tee{spec.Stderr, log}
	}
	return log
}

// sameFile reports whether a and b are open files of one file (one pipe, one terminal).
func sameFile(a, b io.Writer) bool {
	fa, ok1 := a.(*os.File)
	fb, ok2 := b.(*os.File)
	if !ok1 || !ok2 {
		return false
	}
	sa, err1 := fa.Stat()
	sb, err2 := fb.Stat()
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// tee writes to w, and what w took to log, whose failures never reach the command.
type tee struct {
	w   io.Writer
	log io.Writer
}

func (t tee) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	if n > 0 {
		_, _ = t.log.Write(p[:n])
	}
	return n, err
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// record puts run in session.json: it replaces the record of the same run (its start and backend) made when it
// began, else it is added with the session's next run number (set in run).
func (r *Runner) record(run *layout.Run) {
	_, err := r.store.Update(r.id, func(m *layout.Meta) error {
		for i := len(m.Runs) - 1; i >= 0; i-- {
			if m.Runs[i].Start.Equal(run.Start) && m.Runs[i].Backend == run.Backend && m.Runs[i].End.IsZero() {
				m.Runs[i] = *run
				return nil
			}
		}
		run.N = m.NextRunNumber()
		m.Runs = append(m.Runs, *run)
		return nil
	})
	if err != nil && r.Warn != nil {
		r.Warn(fmt.Errorf("could not record the run: %w", err))
	}
}
