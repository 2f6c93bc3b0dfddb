package layout

// LeaseHolder is who the record of session id's run lease names: the runner holding it, or nil when none is
// recorded. A runner that died without releasing leaves its record (the lock itself went with it): callers on
// the holder's host check its pid.
func (s *Store) LeaseHolder(id string) *Holder {
	if ValidateID(id) != nil || s.open() != nil {
		return nil
	}
	return s.leaseHolder(leaseName(id))
}
