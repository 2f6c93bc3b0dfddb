package remote

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sessionfs/sessionfs/layout"
)

// Agreed is a file as both sides last agreed on it: its local and remote attributes, and the SHA-256 of its bytes
// (so an append can be told from a rewrite without reading the other side).
type Agreed struct {
	Local  File   `json:"local"`
	Remote File   `json:"remote"`
	Sum    string `json:"sum"`
}

// Manifest is the last state a session and one remote agreed on, kept in the store beside the sessions
// (sync/<id>/<remote key>.json), never in the session, so it never syncs itself. Each file applied is appended to
// a journal at once, so a sync killed half-way keeps what it did and the rerun goes on from there.
type Manifest struct {
	Remote string            `json:"remote"`
	Files  map[string]Agreed `json:"files"`

	path    string
	journal *os.File
}

// manifestPath is the manifest of session id with the remote named url.
func manifestPath(store *layout.Store, id, url string) string {
	sum := sha256.Sum256([]byte(url))
	return filepath.Join(store.Root, "sync", id, hex.EncodeToString(sum[:8])+".json")
}

type journalLine struct {
	Rel    string  `json:"rel"`
	Agreed *Agreed `json:"agreed,omitempty"` // nil: no longer agreed
}

func loadManifest(p, url string) (*Manifest, error) {
	m := &Manifest{Remote: url, Files: map[string]Agreed{}, path: p}
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
		m.Files = map[string]Agreed{}
	}
	j, err := os.ReadFile(p + ".journal")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, line := range bytes.Split(j, []byte("\n")) {
		var l journalLine
		if json.Unmarshal(line, &l) != nil || l.Rel == "" {
			continue // a line cut short by the kill
		}
		if l.Agreed != nil {
			m.Files[l.Rel] = *l.Agreed
		} else {
			delete(m.Files, l.Rel)
		}
	}
	return m, nil
}

// note records rel's agreed state (nil: none) and appends it to the journal at once.
func (m *Manifest) note(rel string, a *Agreed) error {
	if a != nil {
		m.Files[rel] = *a
	} else {
		delete(m.Files, rel)
	}
	if m.journal == nil {
		if err := os.MkdirAll(filepath.Dir(m.path), 0o700); err != nil {
			return err
		}
		f, err := os.OpenFile(m.path+".journal", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		m.journal = f
	}
	b, err := json.Marshal(journalLine{Rel: rel, Agreed: a})
	if err != nil {
		return err
	}
	_, err = m.journal.Write(append(b, '\n'))
	return err
}

// save writes the manifest whole and drops the journal.
func (m *Manifest) save() error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(m.path), 0o700); err != nil {
		return err
	}
	if err := layout.WriteFileAtomic(m.path, b, 0o600); err != nil {
		return err
	}
	m.close()
	if err := os.Remove(m.path + ".journal"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (m *Manifest) close() {
	if m.journal != nil {
		m.journal.Close()
		m.journal = nil
	}
}
