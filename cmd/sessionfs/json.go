package main

import (
	"time"

	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/session"
)

// sessionView is a session as ls --json, show --json and their --format see it: the same keys in both, every one
// always present (null, [] or {} when there is nothing), so scripts need no guard for a key that comes and goes.
type sessionView struct {
	ID           string            `json:"id"`
	Created      *time.Time        `json:"created"` // null for a damaged session
	Labels       map[string]string `json:"labels"`
	Cwds         []string          `json:"cwds"`
	Aliases      []string          `json:"aliases"`
	ForkedFrom   *string           `json:"forked_from"`
	Runs         []runJSON         `json:"runs"`
	Store        layout.Paths      `json:"store"`   // where the session is in the store
	Mounted      *layout.Paths     `json:"mounted"` // where it is through the mount; null when not mounted
	Size         int64             `json:"size"`
	LastActivity *time.Time        `json:"last_activity"`
	Damaged      *string           `json:"damaged"` // why its session.json cannot be read; null when it can
}

// viewOf builds the view of session m (info: its size, activity and damage, as the store lists it); mnt is where
// the store is mounted ("" when it is not).
func viewOf(s *layout.Store, mnt string, m *layout.Meta, info layout.Info) sessionView {
	v := sessionView{ID: m.ID, Labels: m.Labels, Cwds: orEmpty(m.Cwds), Aliases: orEmpty(m.Aliases),
		Store: layout.Derive(s.Dir(m.ID)), Size: info.Size}
	if v.Labels == nil {
		v.Labels = map[string]string{}
	}
	v.Created, v.ForkedFrom = nullIfZero(m.Created), nullIfZero(m.ForkedFrom)
	// Only a last run with no end asks the lease whether it still runs.
	running := len(m.Runs) > 0 && m.Runs[len(m.Runs)-1].End.IsZero() && s.Running(m.ID)
	v.Runs = runsOf(m, running)
	if mnt != "" {
		p := layout.Derive(session.Path(mnt, m.ID))
		v.Mounted = &p
	}
	v.LastActivity, v.Damaged = nullIfZero(info.LastActivity), nullIfZero(info.Damaged)
	return v
}

// runJSON is a run as runs --json and --format show it: every key present, null where unknown.
type runJSON struct {
	ID      string     `json:"id"` // SESSION/N, as ps shows it and logs takes it
	N       int        `json:"n"`  // the run's number in its session
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
	Imported bool    `json:"imported"`  // it came in an archive: it ran on another machine, whose output stayed there
}

// runsOf turns session m's runs into what runs prints; running says the session's runner is alive.
func runsOf(m *layout.Meta, running bool) []runJSON {
	out := make([]runJSON, 0, len(m.Runs))
	for i, r := range m.Runs {
		out = append(out, runOf(m.ID, m.RunNumber(i), r, i == len(m.Runs)-1 && running))
	}
	return out
}

// runOf is run n of session id as runs and ps show it; running says it is in progress, when it has no end.
func runOf(id string, n int, r layout.Run, running bool) runJSON {
	j := runJSON{ID: layout.RunID(id, n), N: n, Backend: r.Backend, Image: r.Image, Command: orEmpty(r.Command),
		Start: r.Start, Status: "unfinished", Imported: r.Imported}
	if running {
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
	return j
}

// nullIfZero points to v, or is nil (JSON null) when v is its type's zero: a time or a text not known.
func nullIfZero[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}
