package layout

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Meta is a session's session.json: what cannot be derived from the folders themselves.
type Meta struct {
	ID      string            `json:"id"`
	Created time.Time         `json:"created"`
	Labels  map[string]string `json:"labels,omitempty"`
	// Cwds are the working directories the session's processes are known to have used (raw paths).
	Cwds []string `json:"cwds,omitempty"`
	// Aliases are the folder names under .claude/projects that processes have used: each a view of the canonical
	// transcript folder when the store is mounted.
	Aliases []string `json:"aliases,omitempty"`
	Runs    []Run    `json:"runs,omitempty"`
}

// Run records one process run for the session by a backend.
type Run struct {
	Backend  string    `json:"backend"`
	Image    string    `json:"image,omitempty"`
	Command  []string  `json:"command,omitempty"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end,omitzero"`
	ExitCode int       `json:"exit_code"`
	Error    string    `json:"error,omitempty"`
}

// AddAlias records a projects folder name; it reports whether the name was new.
func (m *Meta) AddAlias(name string) bool {
	if name == CanonicalProject || slices.Contains(m.Aliases, name) {
		return false
	}
	m.Aliases = append(m.Aliases, name)
	return true
}

// AddCwd records a working directory; it reports whether it was new.
func (m *Meta) AddCwd(cwd string) bool {
	if cwd == "" || slices.Contains(m.Cwds, cwd) {
		return false
	}
	m.Cwds = append(m.Cwds, cwd)
	return true
}

func readMeta(path string) (*Meta, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDamaged, err)
	}
	return &m, nil
}

// writeMeta replaces path atomically (temp file, fsync, rename), so a crash leaves the old or the new file, never
// half of one.
func writeMeta(path string, m *Meta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, append(b, '\n'), 0o644)
}

// WriteFileAtomic writes data to a temporary file beside path, syncs it and renames it over path.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
