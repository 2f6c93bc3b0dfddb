package layout

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
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

// RestoreSession moves the newest removed copy of session id back to sessions/<id>, and its owner's record back
// to owners/<id> (a stale record of another session of that id is never inherited). A session of that id that
// exists again is never overwritten (ErrExists).
func (s *Store) RestoreSession(id string) (dir string, err error) {
	return s.RestoreSessionAs(id, "")
}

// RestoreSessionAs puts back a removed session: which is a session's id (its newest removed copy) or a copy's
// name in the trash (TrashedSession.Name, as trash ls shows it), as the id it gets (its own when ""). The copy's
// owner's record moves with it to owners/<as>, the only record it may have: a stale record left at as is
// cleared first, and the record of another id is never taken. A session at as is never overwritten (ErrExists).
func (s *Store) RestoreSessionAs(which, as string) (dir string, err error) {
	id, named := which, false
	if got, _, ok := parseTrashName(which); ok {
		if trash, err := s.Trash(); err == nil {
			if _, err := trash.Lstat(which); err == nil {
				id, named = got, true
			}
		}
	}
	if err := ValidateID(id); err != nil {
		return "", err
	}
	if as == "" {
		as = id
	}
	if err := ValidateID(as); err != nil {
		return "", err
	}
	if err := s.restoreLocked(id, which, named, as); err != nil {
		return "", err
	}
	if as != id {
		if _, err := s.Update(as, func(*Meta) error { return nil }); err != nil { // session.json's id follows
			return s.Dir(as), err
		}
	}
	return s.Dir(as), nil
}

// restoreLocked moves copy name of session id (its newest when not named) to as, with its owner's record and
// logs, under the locks of id and as.
func (s *Store) restoreLocked(id, name string, named bool, as string) error {
	unlock, err := s.lockIDs(id, as)
	if err != nil {
		return wrap("restore", id, s.LocksDir(), err)
	}
	defer unlock()
	list, err := s.TrashedSessions(id)
	if err != nil {
		return err
	}
	if named {
		list = slices.DeleteFunc(list, func(t TrashedSession) bool { return t.Name != name })
	}
	if len(list) == 0 {
		return &Error{Op: "restore", ID: id, Kind: ErrNotFound, Err: errors.New("nothing of that id in the trash")}
	}
	trash, err := s.Trash()
	if err != nil {
		return err
	}
	sessions, err := s.Sessions()
	if err != nil {
		return err
	}
	if err := s.clearStaleOwner(as); err != nil {
		return wrap("restore", as, s.ownerPath(as), err)
	}
	if err := trash.RenameTo(list[0].Name, sessions, as, unix.RENAME_NOREPLACE); err != nil {
		if errors.Is(err, syscall.EEXIST) || errors.Is(err, syscall.ENOTEMPTY) {
			return &Error{Op: "restore", ID: as, Kind: ErrExists}
		}
		return wrap("restore", id, list[0].Dir, err)
	}
	if _, err := s.moveOwner(trashedOwnerRel(list[0].Name), ownerRel(as)); err != nil {
		// Back to the trash with its record: restored without it, the session would have no owner.
		if uerr := sessions.RenameTo(as, trash, list[0].Name, unix.RENAME_NOREPLACE); uerr != nil {
			err = errors.Join(err, fmt.Errorf("and the session stays restored without its owner's record: %w", uerr))
		}
		return wrap("restore", as, s.ownerPath(as), err)
	}
	s.moveLogs(trashedLogsRel(list[0].Name), logsRel(as))
	s.Reindex(as)
	return nil
}

// Remove moves a session to the trash, and its owner's record beside it (so a later session of the id does not
// inherit it, and a restored one keeps it). Nothing is deleted: gc does that. The entry sessions/<id> is renamed
// from the sessions folder's descriptor to the trash's, whatever it is, never followed.
func (s *Store) Remove(id string) (trashed string, err error) {
	if err := ValidateID(id); err != nil {
		return "", err
	}
	sessions, err := s.Sessions()
	if err != nil {
		return "", err
	}
	trash, err := s.Trash()
	if err != nil {
		return "", err
	}
	unlock, err := s.lockIDs(id)
	if err != nil {
		return "", wrap("remove", id, s.LocksDir(), err)
	}
	defer unlock()
	name := trashedName(id, time.Now())
	// The record first: a crash between the two leaves a session of no owner (refused, never given away), not a
	// record waiting for the next session of the id.
	moved, err := s.moveOwner(ownerRel(id), trashedOwnerRel(name))
	if err != nil {
		return "", wrap("remove", id, s.ownerPath(id), err)
	}
	if err := sessions.RenameTo(id, trash, name, unix.RENAME_NOREPLACE); err != nil {
		if moved {
			if uerr := s.root.Rename(trashedOwnerRel(name), ownerRel(id), unix.RENAME_NOREPLACE); uerr != nil {
				err = errors.Join(err, fmt.Errorf("and its owner's record stays at %s: %w", s.Root+"/"+trashedOwnerRel(name), uerr))
			}
		}
		if errors.Is(err, syscall.ENOENT) {
			return "", &Error{Op: "remove", ID: id, Kind: ErrNotFound}
		}
		return "", wrap("remove", id, s.Dir(id), err)
	}
	s.moveLogs(logsRel(id), trashedLogsRel(name))
	return filepath.Join(s.TrashDir(), name), nil
}

// GCOptions say what gc may delete for good.
type GCOptions struct {
	Trash     bool          // empty the trash
	IdleFor   time.Duration // move sessions idle longer than this to the trash (0: none)
	DryRun    bool
	Now       time.Time
	OnRemoved func(what, path string, size int64) // told of each action and the bytes it concerns, for the CLI
}

// GC empties the trash and trashes idle sessions, as asked. The trash's transcripts folder is emptied but kept:
// it is where a transcript goes when the disk is too full to make a folder.
func (s *Store) GC(opts GCOptions) error {
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	note := func(what, path string, size int64) {
		if opts.OnRemoved != nil {
			opts.OnRemoved(what, path, size)
		}
	}
	pending := map[string]int64{} // a dry run's idle sessions, by the name they would have in the trash
	if opts.IdleFor > 0 {
		infos, err := s.List()
		if err != nil {
			return err
		}
		for _, in := range infos {
			if opts.Now.Sub(in.LastActivity) <= opts.IdleFor {
				continue
			}
			note("trash idle session", in.ID, in.Size)
			if opts.DryRun {
				pending[trashedName(in.ID, opts.Now)] = in.Size // listed with the trash's deletions, as if trashed
				continue
			}
			// Trashed now, and deleted below with the rest of the trash when --trash says so (a dry run lists it
			// among the deletions above).
			if _, err := s.Remove(in.ID); err != nil {
				return err
			}
		}
	}
	if opts.Trash {
		trash, err := s.Trash()
		if err != nil {
			return err
		}
		ents, err := trash.ReadDir(".")
		if err != nil {
			return wrap("gc", "", s.TrashDir(), err)
		}
		names := slices.Collect(maps.Keys(pending))
		for _, e := range ents {
			names = append(names, e.Name())
		}
		slices.Sort(names) // the order the real run, which finds the idle sessions in the trash, goes in
		for _, name := range names {
			if size, ok := pending[name]; ok {
				note("delete", filepath.Join(s.TrashDir(), name), size)
				continue
			}
			if name == transcriptTrash {
				if st, err := trash.Lstat(name); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
					if err := s.emptyFolder(trash, transcriptTrash, opts.DryRun, note); err != nil {
						return err
					}
					continue
				}
			}
			if err := s.removeAll(trash, name, opts.DryRun, note); err != nil {
				return err
			}
		}
		if !opts.DryRun {
			// The owners' records of the sessions deleted, and of any deleted otherwise (by hand, or a failed
			// create's cleanup).
			if err := s.sweepTrashedOwners(trash); err != nil {
				return err
			}
			s.sweepTrashedLogs(trash)
		}
	}
	return nil
}

func (s *Store) emptyFolder(trash *Dir, rel string, dryRun bool, note func(what, path string, size int64)) error {
	ents, err := trash.ReadDir(rel)
	if err != nil {
		return wrap("gc", "", filepath.Join(s.TrashDir(), rel), err)
	}
	for _, e := range ents {
		if err := s.removeAll(trash, rel+"/"+e.Name(), dryRun, note); err != nil {
			return err
		}
	}
	return nil
}

// removeAll deletes rel beneath the trash for good. os.RemoveAll works from descriptors and never follows a
// symlink; the path is the trash's own (the store's, trusted) up to rel, whose parts are daemon-made.
func (s *Store) removeAll(trash *Dir, rel string, dryRun bool, note func(what, path string, size int64)) error {
	p := filepath.Join(s.TrashDir(), rel)
	var size int64
	if st, err := trash.Lstat(rel); err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		size = st.Size
	} else if sub, err := trash.Sub(rel); err == nil {
		size, _ = UsageIn(sub)
		sub.Close()
	}
	note("delete", p, size)
	if dryRun {
		return nil
	}
	if err := os.RemoveAll(p); err != nil {
		return wrap("gc", "", p, err)
	}
	return nil
}
