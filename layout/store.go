package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
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

// Store is the on-disk source of truth: <root>/sessions/<id>/, <root>/trash/, <root>/locks/ and <root>/owners/. Plain folders,
// readable with no daemon running. The root and the store's own folders are trusted (the administrator's and the
// daemon's); everything inside a session folder is not, so every access to it is resolved beneath an open
// descriptor of the sessions folder, never through a symlink (see Dir). A Store is safe for concurrent use;
// session.json updates are serialised per session across processes (Update).
type Store struct {
	Root string

	once    sync.Once
	openErr error
	root    *Dir // <root>
	sess    *Dir // <root>/sessions
	trash   *Dir // <root>/trash

	locks sync.Map // id -> *sync.Mutex, serialising a session's changes (session.json, its place, its owner) within the process

	// IndexProgress, when set, is told how many of the sessions the index found stale (changed, copied in, never
	// indexed) have been rescanned, of how many: a first ls of 10,000 copied sessions walks every one of them.
	// Called from one goroutine at a time.
	IndexProgress func(done, total int)

	// Vouched, when set, gives the fingerprints of sessions a process watching the store vouches for
	// (IndexWatch.Vouch, read by ParseVouched): a record of the same fingerprint is taken as fresh without stat-ing
	// its names. It is asked while the sessions folder and the index are read, so a mount's answer costs no wait.
	Vouched func() map[string]string
}

// Folders of the store made by OpenStore. transcriptTrash always exists, so that a transcript can be trashed on
// a full disk, when no folder can be made (TrashTranscript).
const (
	sessionsName    = "sessions"
	trashName       = "trash"
	locksName       = "locks"
	transcriptTrash = "transcripts" // beneath trash
)

// OpenStore opens (creating if need be) the store at root. Close releases it.
func OpenStore(root string) (*Store, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, wrap("open store", "", root, err)
	}
	s := &Store{Root: abs}
	if err := s.open(); err != nil {
		return nil, err
	}
	return s, nil
}

// open makes and opens the store's folders, once. A Store made as a literal (Store{Root: ...}) opens them on
// first use.
func (s *Store) open() error {
	s.once.Do(func() { s.openErr = s.doOpen() })
	return s.openErr
}

func (s *Store) doOpen() (err error) {
	defer func() {
		if err != nil {
			s.closeDirs()
		}
	}()
	for _, d := range []string{s.SessionsDir(), s.TrashDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return wrap("open store", "", d, err)
		}
	}
	if s.root, err = OpenDir(s.Root); err != nil {
		return wrap("open store", "", s.Root, err)
	}
	if s.sess, err = s.root.Sub(sessionsName); err != nil {
		return wrap("open store", "", s.SessionsDir(), err)
	}
	if s.trash, err = s.root.Sub(trashName); err != nil {
		return wrap("open store", "", s.TrashDir(), err)
	}
	// Best effort: a read-only store still lists and reads.
	_ = s.trash.MkdirAll(transcriptTrash, 0o700, -1, -1)
	_ = s.root.MkdirAll(locksName, 0o700, -1, -1)
	_ = s.root.MkdirAll(ownersName, 0o700, -1, -1)
	return nil
}

func (s *Store) closeDirs() error {
	var errs []error
	for _, d := range []**Dir{&s.root, &s.sess, &s.trash} {
		if *d != nil {
			errs = append(errs, (*d).Close())
			*d = nil
		}
	}
	return errors.Join(errs...)
}

// Close releases the store's folders. The Store must not be used afterwards.
func (s *Store) Close() error {
	if s == nil {
		return nil
	}
	s.once.Do(func() { s.openErr = errors.New("store closed") })
	if s.openErr == nil {
		s.openErr = errors.New("store closed")
	}
	return s.closeDirs()
}

// Sessions is the open sessions folder, beneath which every session is resolved. It stays owned by s: do not
// close it.
func (s *Store) Sessions() (*Dir, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	return s.sess, nil
}

// Trash is the open trash folder. It stays owned by s: do not close it.
func (s *Store) Trash() (*Dir, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	return s.trash, nil
}

// OpenSession opens the folder of session id beneath the sessions folder: ErrInvalidID for a bad id,
// ErrNotFound when there is no such folder, or when sessions/<id> is not a folder (a symlink planted there is
// refused, never followed). The caller closes the Dir; every access to the session's contents goes through it.
func (s *Store) OpenSession(id string) (*Dir, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	sessions, err := s.Sessions()
	if err != nil {
		return nil, err
	}
	d, err := sessions.Sub(id)
	switch {
	case err == nil:
		return d, nil
	case errors.Is(err, syscall.ENOENT):
		return nil, &Error{Op: "open", ID: id, Kind: ErrNotFound}
	case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.ENOTDIR):
		return nil, &Error{Op: "open", ID: id, Path: s.Dir(id), Kind: ErrNotFound, Err: errors.New("not a folder (a symlink or a file)")}
	}
	return nil, wrap("open", id, s.Dir(id), err)
}

// SessionsDir holds one folder per session.
func (s *Store) SessionsDir() string { return filepath.Join(s.Root, sessionsName) }

// TrashDir holds removed sessions until gc.
func (s *Store) TrashDir() string { return filepath.Join(s.Root, trashName) }

// LocksDir holds the lock files of Update, outside every session (a session could hold a lock of its own
// forever).
func (s *Store) LocksDir() string { return filepath.Join(s.Root, locksName) }

// Dir is the folder of session id. The id must be valid; Paths checks it. The path is for messages and for
// handing to trusted tools; the daemon itself resolves sessions with OpenSession.
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
	// Namespace is the Kubernetes namespace that owns the new session (the CSI plugin's tenancy): recorded in the
	// store's owners folder, which decides (Namespace), and in session.json for display. CapacityBytes is
	// recorded in the new session's Meta.
	Namespace     string
	CapacityBytes int64
}

// Create makes a session with the convention folders and its session.json. It is all or nothing: the session is
// assembled in a staging folder and renamed into place, so a failure (a full disk, say) leaves no partial session.
func (s *Store) Create(id string, opts CreateOptions) (*Meta, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	sessions, err := s.Sessions()
	if err != nil {
		return nil, err
	}
	if _, err := sessions.Lstat(id); err == nil {
		return nil, &Error{Op: "create", ID: id, Kind: ErrExists}
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	// The staging folder is beside sessions/ in the (trusted) root, so no session can see it half made.
	stage, err := os.MkdirTemp(s.Root, ".new-"+id+"-")
	if err != nil {
		return nil, wrap("create", id, s.Root, err)
	}
	defer os.RemoveAll(stage) // a no-op once renamed into place
	name := filepath.Base(stage)
	sd, err := s.root.Sub(name)
	if err != nil {
		return nil, wrap("create", id, stage, err)
	}
	defer sd.Close()

	m := &Meta{ID: id, Created: opts.Now.UTC(), Labels: opts.Labels, Namespace: opts.Namespace, CapacityBytes: opts.CapacityBytes}
	if err := populate(sd, m, opts.Profile); err != nil {
		return nil, wrap("create", id, "", err)
	}
	if err := os.Chmod(stage, 0o755); err != nil {
		return nil, wrap("create", id, stage, err)
	}
	// The session's place and its owner's record change together, under its lock (Namespace waits for it).
	unlock, err := s.lockIDs(id)
	if err != nil {
		return nil, wrap("create", id, s.LocksDir(), err)
	}
	defer unlock()
	if err := s.clearStaleOwner(id); err != nil {
		return nil, wrap("create", id, s.ownerPath(id), err)
	}
	// RENAME_NOREPLACE: a session created meanwhile by someone else is never merged with or replaced by this one,
	// nor is its owner's record, written only once this session has won the name.
	if err := s.root.RenameTo(name, sessions, id, unix.RENAME_NOREPLACE); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, &Error{Op: "create", ID: id, Kind: ErrExists}
		}
		return nil, wrap("create", id, s.Dir(id), err)
	}
	if opts.Namespace != "" {
		if err := s.setOwner(id, opts.Namespace); err != nil {
			// All or nothing: a session of no owner is not what was asked. It goes back to the staging folder,
			// which the deferred RemoveAll deletes.
			if uerr := sessions.RenameTo(id, s.root, name, unix.RENAME_NOREPLACE); uerr != nil {
				err = errors.Join(err, fmt.Errorf("and it could not be undone (remove %s by hand): %w", s.Dir(id), uerr))
			}
			return nil, wrap("create", id, s.ownerPath(id), err)
		}
	}
	s.Reindex(id)
	return m, nil
}

// Adopt gives an existing folder sessions/<id> (made by mkdir through the mount, or by hand) the convention
// folders and a session.json, keeping whatever it already holds. Nothing in the folder is followed: a symlink
// where a convention folder should be is an error. New folders and files get the session folder's owner.
func (s *Store) Adopt(id string) (*Meta, error) {
	d, err := s.OpenSession(id)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if m, err := readMeta(d, id); err == nil {
		return m, wrap("adopt", id, s.Dir(id), ensureFolders(d))
	}
	m := &Meta{ID: id, Created: time.Now().UTC()}
	if err := populate(d, m, ""); err != nil {
		return nil, wrap("adopt", id, s.Dir(id), err)
	}
	return m, nil
}

// populate makes the convention in the session folder d: folders, profile, session.json.
func populate(d *Dir, m *Meta, profile string) error {
	if err := ensureFolders(d); err != nil {
		return err
	}
	if profile != "" {
		uid, gid, err := d.Owner()
		if err != nil {
			return err
		}
		claude, err := d.Sub(ClaudeDir)
		if err != nil {
			return err
		}
		defer claude.Close()
		if err := CopyProfileInto(profile, claude, uid, gid); err != nil {
			return err
		}
	}
	return writeMeta(d, m)
}

// ensureFolders makes the convention folders beneath d, owned like d.
func ensureFolders(d *Dir) error {
	uid, gid, err := d.Owner()
	if err != nil {
		return err
	}
	for _, rel := range []string{AppDir, WorkspaceDir, MCPDir, ProjectsDir + "/" + CanonicalProject} {
		if err := d.MkdirAll(rel, 0o755, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// Get reads a session's metadata. Its ID is always the folder's name, whatever session.json says.
func (s *Store) Get(id string) (*Meta, error) {
	d, err := s.OpenSession(id)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return s.get(d, id)
}

func (s *Store) get(d *Dir, id string) (*Meta, error) {
	m, err := readMeta(d, id)
	if err != nil {
		path := filepath.Join(s.Dir(id), MetaFile)
		switch {
		case errors.Is(err, ErrDamaged):
			return nil, &Error{Op: "open", ID: id, Path: path, Err: err}
		case errors.Is(err, fs.ErrNotExist):
			return nil, &Error{Op: "open", ID: id, Path: path, Kind: ErrDamaged, Err: errors.New("session.json is missing")}
		}
		return nil, wrap("open", id, path, err)
	}
	return m, nil
}

// Exists reports whether session id has a folder (not a symlink to one) in the store.
func (s *Store) Exists(id string) bool {
	if ValidateID(id) != nil {
		return false
	}
	sessions, err := s.Sessions()
	if err != nil {
		return false
	}
	st, err := sessions.Lstat(id)
	return err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}

// Update applies fn to a session's metadata and writes it back atomically. Updates of one session are
// serialised within the process and across processes (a flock on <root>/locks/<id>.lock, outside the session),
// so concurrent updaters never lose each other's changes. The ID stays the folder's name whatever fn does.
func (s *Store) Update(id string, fn func(*Meta) error) (*Meta, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	unlock, err := s.lockIDs(id)
	if err != nil {
		return nil, wrap("update", id, filepath.Join(s.LocksDir(), id+".lock"), err)
	}
	defer unlock()
	d, err := s.OpenSession(id)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	m, err := s.get(d, id)
	if err != nil {
		return nil, err
	}
	if err := fn(m); err != nil {
		return nil, err
	}
	m.ID = id
	m.sanitize()
	if err := writeMeta(d, m); err != nil {
		return nil, wrap("update", id, "", err)
	}
	return m, nil
}

// lockIDs takes the locks of sessions ids, each the process's mutex then the cross-process flock, in one order
// whoever asks, so two callers locking the same two sessions never each hold one and wait for the other.
func (s *Store) lockIDs(ids ...string) (unlock func(), err error) {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	var unlocks []func()
	unlock = func() {
		for i := len(unlocks) - 1; i >= 0; i-- {
			unlocks[i]()
		}
	}
	for _, id := range ids {
		mu, _ := s.locks.LoadOrStore(id, new(sync.Mutex))
		mu.(*sync.Mutex).Lock()
		un, err := s.lock(id)
		if err != nil {
			mu.(*sync.Mutex).Unlock()
			unlock()
			return nil, err
		}
		unlocks = append(unlocks, func() { un(); mu.(*sync.Mutex).Unlock() })
	}
	return unlock, nil
}

// lock takes the cross-process lock of session id. The lock file is never removed: removing it would let two
// processes hold "the" lock on two different files.
func (s *Store) lock(id string) (unlock func(), err error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	rel := locksName + "/" + id + ".lock"
	flags := unix.O_RDWR | unix.O_CREAT | unix.O_NONBLOCK | unix.O_NOCTTY
	fd, err := s.root.OpenAt(rel, flags, 0o600)
	if errors.Is(err, syscall.ENOENT) { // an old store, or one whose locks folder was removed
		if err = s.root.MkdirAll(locksName, 0o700, -1, -1); err == nil {
			fd, err = s.root.OpenAt(rel, flags, 0o600)
		}
	}
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return func() { // unlocked first: a close on a FUSE filesystem releases it only later (Lease.Release)
		_ = unix.Flock(fd, unix.LOCK_UN)
		unix.Close(fd)
	}, nil
}
