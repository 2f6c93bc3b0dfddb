package layout

import "errors"

// Running reports whether a runner holds session id's run lease: its record names one, alive if on this host (a
// runner on another host is taken at its record's word).
func (s *Store) Running(id string) bool {
	h := s.LeaseHolder(id)
	return h != nil && h.Alive()
}

// RemoveIdle moves session id to the trash (Remove) holding its run lease, which keeps runners out while it goes.
// A session something runs in is refused with a *RunningError, unless force: its run then goes on in the trash.
func (s *Store) RemoveIdle(id string, force bool) (trashed string, err error) {
	lease, err := s.TryLease(id, ThisProcess())
	if err != nil && !(force && errors.Is(err, ErrRunning)) {
		return "", err
	}
	defer lease.Release() // nil when forced past a runner
	return s.Remove(id)
}

// RenameIdle gives session from the id to (Rename) holding its run lease: a session's id is in its runs' binds and
// cwds, so one something runs in is refused with a *RunningError.
func (s *Store) RenameIdle(from, to string) error {
	lease, err := s.TryLease(from, ThisProcess())
	if err != nil {
		return err
	}
	defer lease.Release()
	return s.Rename(from, to)
}
