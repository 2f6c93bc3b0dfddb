package layout

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// Info describes a session for listings. A session whose session.json is missing or malformed is still listed,
// with Damaged saying why, so one bad folder never hides the others.
type Info struct {
	Meta
	Dir          string    `json:"dir"`
	Size         int64     `json:"size"`          // bytes on disk, symlinks not followed
	LastActivity time.Time `json:"last_activity"` // newest mtime in the session
	Damaged      string    `json:"damaged,omitempty"`
}

// IDs lists the ids of the store's sessions, sorted. Names that are not valid ids (staging folders, stray files)
// are skipped.
func (s *Store) IDs() ([]string, error) {
	ents, err := os.ReadDir(s.SessionsDir())
	if err != nil {
		return nil, wrap("list", "", s.SessionsDir(), err)
	}
	ids := make([]string, 0, len(ents))
	for _, e := range ents {
		if e.IsDir() && ValidateID(e.Name()) == nil {
			ids = append(ids, e.Name())
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// List describes every session, with size and last activity.
func (s *Store) List() ([]Info, error) {
	ids, err := s.IDs()
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(ids))
	for _, id := range ids {
		out = append(out, s.Describe(id))
	}
	return out, nil
}

// Describe gathers one session's Info. It never fails: problems are reported in Damaged.
func (s *Store) Describe(id string) Info {
	info := Info{Dir: s.Dir(id)}
	m, err := s.Get(id)
	if err != nil {
		info.ID = id
		info.Damaged = err.Error()
	} else {
		info.Meta = *m
	}
	info.Size, info.LastActivity = Usage(info.Dir)
	return info
}

// Usage walks a folder without following symlinks and returns the bytes it occupies on disk and the newest
// modification time in it. Unreadable parts are skipped: this is for display and idle detection.
func Usage(dir string) (size int64, last time.Time) {
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		size += diskBytes(fi)
		if mt := fi.ModTime(); mt.After(last) {
			last = mt
		}
		return nil
	})
	return size, last
}

// Remove moves sessions to the trash. Nothing is deleted: gc does that.
func (s *Store) Remove(id string) (trashed string, err error) {
	p, err := s.Paths(id)
	if err != nil {
		return "", err
	}
	if _, err := os.Lstat(p.Root); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", &Error{Op: "remove", ID: id, Kind: ErrNotFound}
		}
		return "", wrap("remove", id, p.Root, err)
	}
	dst := filepath.Join(s.TrashDir(), id+"."+time.Now().UTC().Format("20060102T150405.000000000Z"))
	if err := os.Rename(p.Root, dst); err != nil {
		return "", wrap("remove", id, p.Root, err)
	}
	return dst, nil
}

// GCOptions say what gc may delete for good.
type GCOptions struct {
	Trash     bool          // empty the trash
	IdleFor   time.Duration // move sessions idle longer than this to the trash (0: none)
	DryRun    bool
	Now       time.Time
	OnRemoved func(what, path string) // told of each action, for the CLI
}

// GC empties the trash and trashes idle sessions, as asked.
func (s *Store) GC(opts GCOptions) error {
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	note := func(what, path string) {
		if opts.OnRemoved != nil {
			opts.OnRemoved(what, path)
		}
	}
	if opts.IdleFor > 0 {
		infos, err := s.List()
		if err != nil {
			return err
		}
		for _, in := range infos {
			if opts.Now.Sub(in.LastActivity) <= opts.IdleFor {
				continue
			}
			note("trash idle session", in.ID)
			if !opts.DryRun {
				if _, err := s.Remove(in.ID); err != nil {
					return err
				}
			}
		}
	}
	if opts.Trash {
		ents, err := os.ReadDir(s.TrashDir())
		if err != nil {
			return wrap("gc", "", s.TrashDir(), err)
		}
		for _, e := range ents {
			p := filepath.Join(s.TrashDir(), e.Name())
			note("delete", p)
			if !opts.DryRun {
				if err := os.RemoveAll(p); err != nil {
					return wrap("gc", "", p, err)
				}
			}
		}
	}
	return nil
}
