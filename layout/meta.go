package layout

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Meta is a session's session.json: what cannot be derived from the folders themselves.
type Meta struct {
	ID      string            `json:"id"`
	Created time.Time         `json:"created,omitzero"` // absent when unknown (a damaged session)
	Labels  map[string]string `json:"labels,omitempty"`
	// Cwds are the working directories the session's processes are known to have used (raw paths).
	Cwds []string `json:"cwds,omitempty"`
	// Aliases are the folder names under .claude/projects that processes have used: each a view of the canonical
	// transcript folder when the store is mounted.
	Aliases []string `json:"aliases,omitempty"`
	Runs    []Run    `json:"runs,omitempty"`
	// ForkedFrom is the session this one was forked from (sessionfs fork), which keeps the conversations both hold.
	ForkedFrom string `json:"forked_from,omitempty"`
	// Namespace is the Kubernetes namespace the CSI plugin made the session for (a pod or a claim of it), for
	// display only: the session's own processes can rewrite it, so nothing decides access from it. The owner
	// that counts is the store's record, beyond the session's reach (Store.Namespace).
	Namespace string `json:"namespace,omitempty"`
	// CapacityBytes is the capacity a CSI CreateVolume made the session with (0: none asked): a later
	// CreateVolume of the same name must fit it.
	CapacityBytes int64 `json:"capacity_bytes,omitempty"`
}

// Run records one process run for the session by a backend.
type Run struct {
	// N is the run's number in the session (RunNumber; 0 in runs recorded before runs were numbered).
	N        int       `json:"n,omitempty"`
	Backend  string    `json:"backend"`
	Host     string    `json:"host,omitempty"` // the runner's host (runs recorded before hosts were have none)
	Image    string    `json:"image,omitempty"`
	Command  []string  `json:"command,omitempty"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end,omitzero"`
	ExitCode int       `json:"exit_code"`
	Error    string    `json:"error,omitempty"`
	// Imported: the run came in an archive (sessionfs import); it ran on Host, not for this store, and its output
	// (if kept) stayed there.
	Imported bool `json:"imported,omitempty"`
}

// Bounds on what a session.json may make us hold: it is written by the session, which may be hostile. Past
// them, the oldest runs and the newest aliases, cwds and labels are dropped.
const (
	MaxAliases = 1024
	MaxCwds    = 1024
	MaxRuns    = 1000
	MaxLabels  = 256
	// MaxNameLen is the longest folder name (NAME_MAX).
	MaxNameLen = 255
	// MaxCwdLen is the longest recorded cwd (PATH_MAX).
	MaxCwdLen = 4096
)

// ValidAlias reports whether name can be a folder under .claude/projects: one path component, no NUL, not "."
// or "..", at most MaxNameLen bytes. Claude's own names are [A-Za-z0-9-], but any such name is harmless.
func ValidAlias(name string) bool {
	return name != "" && name != "." && name != ".." && len(name) <= MaxNameLen && !strings.ContainsAny(name, "/\x00")
}

// AddAlias records a projects folder name; it reports whether the name was new. Names that cannot be a folder
// name (ValidAlias) are refused.
func (m *Meta) AddAlias(name string) bool {
	if name == CanonicalProject || !ValidAlias(name) || slices.Contains(m.Aliases, name) || len(m.Aliases) >= MaxAliases {
		return false
	}
	m.Aliases = append(m.Aliases, name)
	return true
}

// AddCwd records a working directory; it reports whether it was new.
func (m *Meta) AddCwd(cwd string) bool {
	if !validCwd(cwd) || slices.Contains(m.Cwds, cwd) || len(m.Cwds) >= MaxCwds {
		return false
	}
	m.Cwds = append(m.Cwds, cwd)
	return true
}

func validCwd(cwd string) bool {
	return cwd != "" && len(cwd) <= MaxCwdLen && !strings.ContainsRune(cwd, 0)
}

// sanitize drops what a hostile session.json may hold that we must not act on or hold: alias names that are not
// folder names, duplicates, and lists past their bounds.
func (m *Meta) sanitize() {
	if m.ForkedFrom != "" && ValidateID(m.ForkedFrom) != nil {
		m.ForkedFrom = ""
	}
	aliases := m.Aliases
	m.Aliases = nil
	for _, a := range aliases {
		m.AddAlias(a)
	}
	cwds := m.Cwds
	m.Cwds = nil
	for _, c := range cwds {
		m.AddCwd(c)
	}
	if len(m.Runs) > MaxRuns {
		m.Runs = slices.Clone(m.Runs[len(m.Runs)-MaxRuns:])
	}
	for i := range m.Runs {
		if m.Runs[i].N < 0 || m.Runs[i].N > maxRunNumber {
			m.Runs[i].N = 0
		}
	}
	if len(m.Labels) > MaxLabels {
		keys := slices.Sorted(maps.Keys(m.Labels))
		for _, k := range keys[MaxLabels:] {
			delete(m.Labels, k)
		}
	}
}

// readMeta reads the session.json of the session open as d, whose folder is named id. It reads only a regular
// file, never through a symlink, never blocking on a FIFO, at most MaxMetaSize bytes; anything else is
// ErrDamaged. The session's identity is its folder's name: the ID the file claims is ignored.
func readMeta(d *Dir, id string) (*Meta, error) {
	b, err := d.ReadRegular(MetaFile, MaxMetaSize)
	if err != nil {
		return nil, err
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDamaged, err)
	}
	m.ID = id
	m.sanitize()
	return &m, nil
}

// writeMeta replaces the session.json of the session open as d atomically (temp file, fsync, rename), so a crash
// leaves the old or the new file, never half of one. Whatever the name held (a symlink, a FIFO) is replaced, not
// followed. The file gets the session folder's owner: a root daemon never leaves a root-owned file in a user's
// session.
func writeMeta(d *Dir, m *Meta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	uid, gid, err := d.Owner()
	if err != nil {
		return err
	}
	return d.WriteAtomic(MetaFile, append(b, '\n'), 0o644, uid, gid)
}

// WriteFileAtomic writes data to a temporary file beside path, syncs it and renames it over path. path is
// joined as a string: use it only for files outside sessions (the store's own, the user's). Inside a session use
// Dir.WriteAtomic.
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
