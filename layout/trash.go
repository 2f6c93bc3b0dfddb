package layout

import (
	"errors"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A removed session waits in the trash, whole, as <store>/trash/<id>.<removed>, <removed> being
// trashStampLayout in UTC; restoring renames it back to sessions/<id>.
const trashStampLayout = "20060102T150405.000000000Z"

// TrashedSession is one removed session in the trash.
type TrashedSession struct {
	ID      string    `json:"id"`
	Removed time.Time `json:"removed"`
	Name    string    `json:"name"` // its folder's name in the trash
	Dir     string    `json:"dir"`
	Size    int64     `json:"size"`
}

// trashedName is the folder name session id gets in the trash when removed at now.
func trashedName(id string, now time.Time) string {
	return id + "." + now.UTC().Format(trashStampLayout)
}

// parseTrashName reads a removed session's folder name; ok is false for anything else in the trash.
func parseTrashName(name string) (id string, removed time.Time, ok bool) {
	n := len(trashStampLayout)
	if len(name) < n+2 || name[len(name)-n-1] != '.' {
		return "", time.Time{}, false
	}
	removed, err := time.Parse(trashStampLayout, name[len(name)-n:])
	id = name[:len(name)-n-1]
	if err != nil || ValidateID(id) != nil {
		return "", time.Time{}, false
	}
	return id, removed, true
}

// TrashedSessions lists the removed sessions in the trash, newest first; with id set, only that session's.
// Sizes are walked beneath each folder's descriptor, never following a link.
func (s *Store) TrashedSessions(id string) ([]TrashedSession, error) {
	trash, err := s.Trash()
	if err != nil {
		return nil, err
	}
	ents, err := trash.ReadDir(".")
	if err != nil {
		return nil, wrap("list trash", "", s.TrashDir(), err)
	}
	var out []TrashedSession
	for _, e := range ents {
		got, removed, ok := parseTrashName(e.Name())
		if !ok || !e.IsDir() || (id != "" && got != id) {
			continue
		}
		t := TrashedSession{ID: got, Removed: removed, Name: e.Name(), Dir: filepath.Join(s.TrashDir(), e.Name())}
		if d, err := trash.Sub(e.Name()); err == nil {
			t.Size, _ = UsageIn(d)
			d.Close()
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Removed.Equal(out[j].Removed) {
			return out[i].Removed.After(out[j].Removed)
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// RestoreSession moves the newest removed copy of session id back to sessions/<id>. A session of that id that
// exists again is never overwritten (ErrExists).
func (s *Store) RestoreSession(id string) (dir string, err error) {
	if err := ValidateID(id); err != nil {
		return "", err
	}
	list, err := s.TrashedSessions(id)
	if err != nil {
		return "", err
	}
	if len(list) == 0 {
		return "", &Error{Op: "restore", ID: id, Kind: ErrNotFound, Err: errors.New("nothing of that id in the trash")}
	}
	trash, err := s.Trash()
	if err != nil {
		return "", err
	}
	sessions, err := s.Sessions()
	if err != nil {
		return "", err
	}
	if err := trash.RenameTo(list[0].Name, sessions, id, unix.RENAME_NOREPLACE); err != nil {
		if errors.Is(err, syscall.EEXIST) || errors.Is(err, syscall.ENOTEMPTY) {
			return "", &Error{Op: "restore", ID: id, Kind: ErrExists}
		}
		return "", wrap("restore", id, list[0].Dir, err)
	}
	return s.Dir(id), nil
}

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
