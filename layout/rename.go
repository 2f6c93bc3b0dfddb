package layout

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// Rename gives session from the id to: its folder is renamed beneath the sessions folder, never replacing
// anything (ErrExists), and what waits in its transcript trash follows it.
func (s *Store) Rename(from, to string) error {
	if err := ValidateID(from); err != nil {
		return err
	}
	if err := ValidateID(to); err != nil {
		return err
	}
	if !s.Exists(from) {
		return &Error{Op: "rename", ID: from, Kind: ErrNotFound}
	}
	sessions, err := s.Sessions()
	if err != nil {
		return err
	}
	if err := sessions.Rename(from, to, unix.RENAME_NOREPLACE); err != nil {
		if errors.Is(err, syscall.EEXIST) || errors.Is(err, syscall.ENOTEMPTY) {
			return &Error{Op: "rename", ID: to, Kind: ErrExists}
		}
		return wrap("rename", from, s.Dir(from), err)
	}
	if trash, err := s.Trash(); err == nil {
		_ = trash.Rename(transcriptTrash+"/"+from, transcriptTrash+"/"+to, unix.RENAME_NOREPLACE)
	}
	_, err = s.Update(to, func(*Meta) error { return nil }) // session.json's id follows the folder's name
	return err
}
