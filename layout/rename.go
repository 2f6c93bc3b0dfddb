package layout

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Rename gives session from the id to: its folder is renamed beneath the sessions folder, never replacing
// anything (ErrExists), and its owner's record (a stale record at to is never inherited) and what waits in its
// transcript trash follow it.
func (s *Store) Rename(from, to string) error {
	if err := ValidateID(from); err != nil {
		return err
	}
	if err := ValidateID(to); err != nil {
		return err
	}
	if err := s.renameLocked(from, to); err != nil {
		return err
	}
	if trash, err := s.Trash(); err == nil {
		_ = trash.Rename(transcriptTrash+"/"+from, transcriptTrash+"/"+to, unix.RENAME_NOREPLACE)
	}
	_, err := s.Update(to, func(*Meta) error { return nil }) // session.json's id follows the folder's name
	s.ReindexRenamed(from, to)
	return err
}

// renameLocked moves the session and its owner's record under both sessions' locks.
func (s *Store) renameLocked(from, to string) error {
	unlock, err := s.lockIDs(from, to)
	if err != nil {
		return wrap("rename", from, s.LocksDir(), err)
	}
	defer unlock()
	if !s.Exists(from) {
		return &Error{Op: "rename", ID: from, Kind: ErrNotFound}
	}
	sessions, err := s.Sessions()
	if err != nil {
		return err
	}
	if err := s.clearStaleOwner(to); err != nil {
		return wrap("rename", to, s.ownerPath(to), err)
	}
	if err := sessions.Rename(from, to, unix.RENAME_NOREPLACE); err != nil {
		if errors.Is(err, syscall.EEXIST) || errors.Is(err, syscall.ENOTEMPTY) {
			return &Error{Op: "rename", ID: to, Kind: ErrExists}
		}
		return wrap("rename", from, s.Dir(from), err)
	}
	if _, err := s.moveOwner(ownerRel(from), ownerRel(to)); err != nil {
		// The session goes back to its id, with its record still there: renamed without it, it would have no
		// owner, and its record would wait for the next session of its old id.
		if uerr := sessions.Rename(to, from, unix.RENAME_NOREPLACE); uerr != nil {
			err = errors.Join(err, fmt.Errorf("and the session stays at %s without its owner's record: %w", s.Dir(to), uerr))
		}
		return wrap("rename", from, s.ownerPath(from), err)
	}
	s.moveLogs(logsRel(from), logsRel(to))
	return nil
}
