package backends

import (
	"context"
	"fmt"
	"time"

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
// the store, open for the run) and records the run in session.json: first in progress (no end), which
// "sessionfs runs" shows, then with its end. image is the image recorded (docker, modal). The exit code is the
// command's, or OwnFailure when the backend failed before or around it; err says what failed. Cancelling ctx
// stops the command.
func (r *Runner) Run(ctx context.Context, b Backend, spec Spec, image string) (int, error) {
	folder, err := r.store.OpenSession(r.id)
	if err != nil {
		return OwnFailure, err
	}
	defer folder.Close()
	spec.SessionID, spec.Folder = r.id, folder
	run := layout.Run{Backend: b.Name(), Image: image, Command: spec.Argv, Start: time.Now().UTC()}
	r.record(run)
	code, err := b.Run(ctx, spec)
	if code < 0 {
		code = OwnFailure
	}
	run.End, run.ExitCode = time.Now().UTC(), code
	if err != nil {
		run.Error = err.Error()
	}
	r.record(run)
	return code, err
}

// record puts run in session.json: it replaces the record of the same run (its start and backend) made when it
// began, else it is added.
func (r *Runner) record(run layout.Run) {
	_, err := r.store.Update(r.id, func(m *layout.Meta) error {
		for i := len(m.Runs) - 1; i >= 0; i-- {
			if m.Runs[i].Start.Equal(run.Start) && m.Runs[i].Backend == run.Backend && m.Runs[i].End.IsZero() {
				m.Runs[i] = run
				return nil
			}
		}
		m.Runs = append(m.Runs, run)
		return nil
	})
	if err != nil && r.Warn != nil {
		r.Warn(fmt.Errorf("could not record the run: %w", err))
	}
}
