package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// EnvStore names the store when --store is not given.
const EnvStore = "SESSIONFS_STORE"

// DefaultStoreRoot is $SESSIONFS_STORE, else $XDG_DATA_HOME/sessionfs, else ~/.local/share/sessionfs.
func DefaultStoreRoot() (string, error) {
	if s := os.Getenv(EnvStore); s != "" {
		return filepath.Abs(s)
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "sessionfs"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the default store: %w", err)
	}
	return filepath.Join(home, ".local", "share", "sessionfs"), nil
}

// Store is the on-disk source of truth: <root>/sessions/<id>/ and <root>/trash/. Plain folders, readable with no
// daemon running. A Store is safe for concurrent use within one process; session.json updates are serialised
// per session.
type Store struct {
	Root string

	locks sync.Map // id -> *sync.Mutex, serialising read-modify-write of session.json
}

// OpenStore opens (creating if need be) the store at root.
func OpenStore(root string) (*Store, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, wrap("open store", "", root, err)
	}
	s := &Store{Root: abs}
	for _, d := range []string{s.SessionsDir(), s.TrashDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, wrap("open store", "", d, err)
		}
	}
	return s, nil
}

// SessionsDir holds one folder per session.
func (s *Store) SessionsDir() string { return filepath.Join(s.Root, "sessions") }

// TrashDir holds removed sessions until gc.
func (s *Store) TrashDir() string { return filepath.Join(s.Root, "trash") }

// Dir is the folder of session id. The id must be valid; Paths checks it.
func (s *Store) Dir(id string) string { return filepath.Join(s.SessionsDir(), id) }

// Paths returns the derived paths of a session after checking its id.
func (s *Store) Paths(id string) (Paths, error) {
	if err := ValidateID(id); err != nil {
		return Paths{}, err
	}
	return Derive(s.Dir(id)), nil
}

// CreateOptions shape a new session.
type CreateOptions struct {
	Labels  map[string]string
	Profile string // a .claude template folder copied into the session's .claude
	Now     time.Time
}

// Create makes a session with the convention folders and its session.json. It is all or nothing: the session is
// assembled in a staging folder and renamed into place, so a failure (a full disk, say) leaves no partial session.
func (s *Store) Create(id string, opts CreateOptions) (*Meta, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	dir := s.Dir(id)
	if _, err := os.Lstat(dir); err == nil {
		return nil, &Error{Op: "create", ID: id, Kind: ErrExists}
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	stage, err := os.MkdirTemp(s.Root, ".new-"+id+"-")
	if err != nil {
		return nil, wrap("create", id, s.Root, err)
	}
	defer os.RemoveAll(stage) // a no-op once renamed into place

	m := &Meta{ID: id, Created: opts.Now.UTC(), Labels: opts.Labels}
	if err := populate(stage, m, opts.Profile); err != nil {
		return nil, wrap("create", id, "", err)
	}
	if err := os.Chmod(stage, 0o755); err != nil {
		return nil, wrap("create", id, stage, err)
	}
	// RENAME_NOREPLACE: a session created meanwhile by someone else is never merged with or replaced by this one.
	if err := unix.Renameat2(unix.AT_FDCWD, stage, unix.AT_FDCWD, dir, unix.RENAME_NOREPLACE); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, &Error{Op: "create", ID: id, Kind: ErrExists}
		}
		return nil, wrap("create", id, dir, err)
	}
	return m, nil
}

// Adopt gives an existing folder sessions/<id> (made by mkdir through the mount, or by hand) the convention
// folders and a session.json, keeping whatever it already holds.
func (s *Store) Adopt(id string) (*Meta, error) {
	p, err := s.Paths(id)
	if err != nil {
		return nil, err
	}
	if m, err := readMeta(p.Meta); err == nil {
		return m, ensureFolders(p.Root)
	}
	m := &Meta{ID: id, Created: time.Now().UTC()}
	if err := populate(p.Root, m, ""); err != nil {
		return nil, wrap("create", id, p.Root, err)
	}
	return m, nil
}

func populate(root string, m *Meta, profile string) error {
	if err := ensureFolders(root); err != nil {
		return err
	}
	p := Derive(root)
	if profile != "" {
		if err := CopyProfile(profile, p.Claude); err != nil {
			return err
		}
	}
	return writeMeta(p.Meta, m)
}

func ensureFolders(root string) error {
	p := Derive(root)
	for _, d := range []string{p.App, p.Workspace, p.MCPs, p.Canonical} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// Get reads a session's metadata.
func (s *Store) Get(id string) (*Meta, error) {
	p, err := s.Paths(id)
	if err != nil {
		return nil, err
	}
	m, err := readMeta(p.Meta)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if _, serr := os.Stat(p.Root); serr != nil {
				return nil, &Error{Op: "open", ID: id, Kind: ErrNotFound}
			}
			return nil, &Error{Op: "open", ID: id, Path: p.Meta, Kind: ErrDamaged, Err: errors.New("session.json is missing")}
		}
		if errors.Is(err, ErrDamaged) {
			return nil, &Error{Op: "open", ID: id, Path: p.Meta, Err: err}
		}
		return nil, wrap("open", id, p.Meta, err)
	}
	return m, nil
}

// Exists reports whether session id has a folder in the store.
func (s *Store) Exists(id string) bool {
	if ValidateID(id) != nil {
		return false
	}
	st, err := os.Stat(s.Dir(id))
	return err == nil && st.IsDir()
}

// Update applies fn to a session's metadata and writes it back atomically. Updates of one session within this
// process are serialised.
func (s *Store) Update(id string, fn func(*Meta) error) (*Meta, error) {
	mu, _ := s.locks.LoadOrStore(id, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	m, err := s.Get(id)
	if err != nil {
		return nil, err
	}
	if err := fn(m); err != nil {
		return nil, err
	}
	if err := writeMeta(Derive(s.Dir(id)).Meta, m); err != nil {
		return nil, wrap("update", id, "", err)
	}
	return m, nil
}
