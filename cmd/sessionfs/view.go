package main

import (
	"time"

	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/mount"
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
	v.Created, v.ForkedFrom = known(m.Created), known(m.ForkedFrom)
	// Only a last run with no end asks the lease whether it still runs.
	running := len(m.Runs) > 0 && m.Runs[len(m.Runs)-1].End.IsZero() && runningNow(s, m.ID)
	v.Runs = runsOf(m.Runs, running)
	if mnt != "" {
		p := layout.Derive(session.Path(mnt, m.ID))
		v.Mounted = &p
	}
	v.LastActivity, v.Damaged = known(info.LastActivity), known(info.Damaged)
	return v
}

// known points to v, or is nil (JSON null) when v is its type's zero: a time or a text not known.
func known[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// mountpoint is where the store is mounted, "" when it is not.
func mountpoint(s *layout.Store) string {
	if m, ok := mount.Find(s.Root); ok {
		return m.Mountpoint
	}
	return ""
}

// orZero is the time t points to, or the zero time.
func orZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
