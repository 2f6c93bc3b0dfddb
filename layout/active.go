package layout

import (
	"errors"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"
)

// ActiveRun is a run in progress: session ID's run number N, as session.json records it, and the runner that holds
// the session's lease.
type ActiveRun struct {
	ID     string
	N      int
	Run    Run
	Holder Holder
}

// sinceSlack is how much earlier than its lease a run's record may say it started (they are stamped apart, and a
// lease taken on another host is stamped by that host's clock).
const sinceSlack = 5 * time.Second

// ActiveRuns lists the runs in progress in the store, the oldest first. It reads what a store of many sessions
// allows: the locks folder, the lease records that are not empty (a released lease's record is emptied), then the
// session.json of each session whose runner is alive (Alive). A leased session whose latest run is not open
// (a runner still preparing it, or a CSI publication) has no run in progress to show.
func (s *Store) ActiveRuns() ([]ActiveRun, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	ents, err := s.root.ReadDir(locksName)
	if errors.Is(err, syscall.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap("list runs", "", s.LocksDir(), err)
	}
	var out []ActiveRun
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".run")
		if !ok || ValidateID(id) != nil || !e.Type().IsRegular() {
			continue
		}
		if st, err := s.root.Lstat(leaseName(id)); err != nil || st.Size == 0 {
			continue
		}
		h := s.leaseHolder(leaseName(id))
		if h == nil || !h.Alive() {
			continue
		}
		m, err := s.Get(id)
		if err != nil {
			continue
		}
		i := len(m.Runs) - 1
		if i < 0 || !m.Runs[i].End.IsZero() || m.Runs[i].Start.Before(h.Since.Add(-sinceSlack)) {
			continue
		}
		out = append(out, ActiveRun{ID: id, N: m.RunNumber(i), Run: m.Runs[i], Holder: *h})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Run.Start.Before(out[j].Run.Start) })
	return out, nil
}

// Alive reports whether the runner h names still runs: its process, when on this host (EPERM: alive, another
// user's); a runner on another host is taken at its record's word.
func (h *Holder) Alive() bool {
	if host, _ := os.Hostname(); h.Host == host && h.PID > 0 {
		err := syscall.Kill(h.PID, 0)
		return err == nil || errors.Is(err, syscall.EPERM)
	}
	return true
}
