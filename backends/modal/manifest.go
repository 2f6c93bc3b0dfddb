package modal

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
)

// BlockSize is the Volume's block: files are uploaded as 8 MiB blocks named by the SHA-256 of their bytes without
// trailing zeros, and a block the Volume already holds is never sent again (an appended transcript costs one
// block).
const BlockSize = 8 << 20

// Entry is a file as the store and the Volume last agreed on it.
type Entry struct {
	Size        int64    `json:"size"`
	Mtime       int64    `json:"mtime"` // local, ns
	Mode        uint32   `json:"mode"`
	Blocks      []string `json:"blocks"`       // hex SHA-256 of each block
	RemoteMtime uint64   `json:"remote_mtime"` // as the Volume lists it
}

// Manifest is the last agreed state of a session and its Volume, kept beside the store's sessions (not in the
// session, so it never syncs itself).
type Manifest struct {
	Volume string           `json:"volume"`
	Files  map[string]Entry `json:"files"`
	// Links are the session's symlinks as the Volume has them (made there by the run's script): one gone here is
	// removed there.
	Links map[string]string `json:"links,omitempty"`

	path    string
	journal *os.File
}

func manifestPath(store *layout.Store, id string) string {
	return filepath.Join(store.Root, "sync", id+".json")
}

// journalOf is where progress since the manifest was saved is appended, one JSON line per file: an interrupted
// pull keeps what it applied, and the next one does not see its own work as local changes (false conflicts).
func journalOf(p string) string { return p + ".journal" }

type journalLine struct {
	Rel   string `json:"rel"`
	Entry *Entry `json:"entry,omitempty"` // nil: no longer agreed
}

func loadManifest(p string) (*Manifest, error) {
	m := &Manifest{Files: map[string]Entry{}, Links: map[string]string{}, path: p}
	b, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err == nil {
		if err := json.Unmarshal(b, m); err != nil {
			return nil, err
		}
	}
	if m.Files == nil {
		m.Files = map[string]Entry{}
	}
	if m.Links == nil {
		m.Links = map[string]string{}
	}
	j, err := os.ReadFile(journalOf(p))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, line := range bytes.Split(j, []byte("\n")) {
		var l journalLine
		if json.Unmarshal(line, &l) != nil || l.Rel == "" {
			continue // a line cut short by the interruption
		}
		if l.Entry != nil {
			m.Files[l.Rel] = *l.Entry
		} else {
			delete(m.Files, l.Rel)
		}
	}
	return m, nil
}

// note records rel's agreed state (nil: none) in m and appends it to the journal at once.
func (m *Manifest) note(rel string, e *Entry) error {
	if e != nil {
		m.Files[rel] = *e
	} else {
		delete(m.Files, rel)
	}
	if m.journal == nil {
		if err := os.MkdirAll(filepath.Dir(m.path), 0o700); err != nil {
			return err
		}
		f, err := os.OpenFile(journalOf(m.path), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		m.journal = f
	}
	b, err := json.Marshal(journalLine{Rel: rel, Entry: e})
	if err != nil {
		return err
	}
	_, err = m.journal.Write(append(b, '\n'))
	return err
}

func (m *Manifest) save(p string) error {
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	if err := layout.WriteFileAtomic(p, b, 0o600); err != nil {
		return err
	}
	if m.journal != nil {
		m.journal.Close()
		m.journal = nil
	}
	if err := os.Remove(journalOf(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// reservedDir is sessionfs's own folder on the Volume (the run's script and what the run reports): never synced
// either way; a session's own entry of that name stays local.
const reservedDir = ".sessionfs-run"

// localFile is a regular file of the session as it is now.
type localFile struct {
	Size  int64
	Mtime int64
	Mode  uint32
}

// walkLinks lists the session's symlinks (path -> target), beneath its folder's descriptor, never following one.
func walkLinks(d *layout.Dir) (map[string]string, error) {
	out := map[string]string{}
	err := d.Walk(func(rel string, st *unix.Stat_t) error {
		if rel == reservedDir {
			return layout.SkipDir
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			target, err := d.Readlink(rel)
			if err == nil {
				out[rel] = target
			}
		}
		return nil
	})
	return out, err
}

// walk lists the session's regular files by slash path, beneath its folder's descriptor (layout.Dir.Walk): no
// symlink is followed, even one swapped in while the walk runs, so nothing outside the session is ever sent. The
// Volume file API carries neither symlinks nor empty folders.
func walk(d *layout.Dir) (map[string]localFile, error) {
	out := map[string]localFile{}
	err := d.Walk(func(rel string, st *unix.Stat_t) error {
		if rel == reservedDir {
			return layout.SkipDir
		}
		if st.Mode&unix.S_IFMT == unix.S_IFREG {
			out[rel] = localFile{Size: st.Size, Mtime: st.Mtim.Nano(), Mode: st.Mode & 0o777}
		}
		return nil
	})
	return out, err
}
