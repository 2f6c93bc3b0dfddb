package search

import (
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/sessionfs/sessionfs/layout"
)

const (
	// Dir is the index's folder beneath the store's root; DBName the database in it.
	Dir    = "index"
	DBName = "search.db"
	// lockName is held while the database is opened (lock).
	lockName = "search.lock"
	// schemaVersion changes when the tables do: an index of another version is rebuilt.
	schemaVersion = "4"
	// busyWait is how long a writer waits for another (a second CLI, the daemon) before giving up.
	busyWait = 60 * time.Second
	// walLimit is the size the write-ahead log is cut back to after a checkpoint: a big write leaves it no bigger.
	walLimit = 64 << 20
)

// Entries of one conversation have rowids convID<<convShift + n: a conversation's rows are one rowid range, which
// FTS5 deletes without scanning the table.
const convShift = 32

const schema = `
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS conv(
	id INTEGER PRIMARY KEY,
	session TEXT NOT NULL,
	agent TEXT NOT NULL,
	src TEXT NOT NULL,       -- the file beneath the session ("<db>#<id>" for a conversation that is rows)
	conv TEXT NOT NULL,      -- the agent's id for it ("" for a database's own record)
	size INTEGER NOT NULL, ctime INTEGER NOT NULL, ino INTEGER NOT NULL,
	sig TEXT NOT NULL,       -- what else it was read from: its subagents' files, a database's summary
	done INTEGER NOT NULL,   -- bytes of src indexed, up to the end of a complete line (append-only files)
	tail BLOB,               -- the bytes of src just before done: an append leaves them as they were
	next INTEGER NOT NULL,   -- the number of its next entry
	cost INTEGER NOT NULL DEFAULT 0, -- what its rows cost its session's budget (budget.go)
	read INTEGER NOT NULL DEFAULT 0, -- the bytes of the files read for them, each inode once
	cut TEXT NOT NULL DEFAULT '',    -- why it is indexed in part ("": whole)
	UNIQUE(session, agent, src));
CREATE INDEX IF NOT EXISTS conv_cut ON conv(session) WHERE cut != '';
-- each session's listing as last indexed whole (a hash of its files' stats; "" while being indexed): a session
-- whose listing hashes the same needs nothing, and its rows are not read. cost and read are its conversations'.
CREATE TABLE IF NOT EXISTS sess(session TEXT PRIMARY KEY, sig TEXT NOT NULL,
	cost INTEGER NOT NULL DEFAULT 0, read INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
-- the cwds, tools and subagents a conversation's entries name, each once: an entry holds its number.
CREATE TABLE IF NOT EXISTS str(conv INTEGER NOT NULL, n INTEGER NOT NULL, s TEXT NOT NULL, PRIMARY KEY(conv, n)) WITHOUT ROWID;
-- cwd, tool and sub are numbers in str (0: none), kind a text.Kind.
CREATE VIRTUAL TABLE IF NOT EXISTS entry USING fts5(text, at UNINDEXED, cwd UNINDEXED, kind UNINDEXED,
	off UNINDEXED, tool UNINDEXED, sub UNINDEXED, tokenize = 'unicode61 remove_diacritics 2');
`

// Index is the search index of a store, open.
type Index struct {
	store *layout.Store
	db    *sql.DB
	dir   *layout.Dir // <store>/index, held: the database is opened through it
	ino   uint64      // the database file's, when opened: one set aside and rebuilt by another process differs
	// gen is the generation this process last caught the whole index up in ("": none): a query finding another
	// catches up again first (read).
	gen string
	// progress, when set, is told of the conversations a query's catch-up indexes (read).
	progress func(done, total int)
	// caughtUp, when set (by tests), is called after each whole catch-up.
	caughtUp func()
	// Warn tells the user of what the index did on its own (a corrupt database rebuilt); nil: stderr.
	Warn func(string)
}

// Open opens the store's index, making it if missing. A file there that is not a database of this version is
// rebuilt, warn told why (nil: stderr).
func Open(store *layout.Store, warn func(string)) (*Index, error) {
	ix := &Index{store: store, Warn: warn}
	if err := ix.open(); err != nil {
		ix.Close()
		return nil, err
	}
	return ix, nil
}

// Close closes the index.
func (ix *Index) Close() error {
	var err error
	if ix.db != nil {
		err = ix.db.Close()
		ix.db = nil
	}
	if ix.dir != nil {
		ix.dir.Close()
		ix.dir = nil
	}
	return err
}

func (ix *Index) warn(msg string) {
	if ix.Warn != nil {
		ix.Warn(msg)
		return
	}
	fmt.Fprintln(os.Stderr, "sessionfs: warning: "+msg)
}

// Path is the index's database file, for messages.
func (ix *Index) Path() string { return ix.store.Root + "/" + Dir + "/" + DBName }

func (ix *Index) open() error {
	root, err := layout.OpenDir(ix.store.Root)
	if err != nil {
		return err
	}
	defer root.Close()
	// The store owner's (a root daemon indexes a user's store: the user's CLI must open it too), 0700: what the
	// sessions said is readable by nobody else.
	uid, gid, err := root.Owner()
	if err != nil {
		return err
	}
	if err := root.MkdirAll(Dir, 0o700, uid, gid); err != nil {
		return fmt.Errorf("index: %w", err)
	}
	if ix.dir, err = root.Sub(Dir); err != nil {
		return fmt.Errorf("index: %w", err)
	}
	unlock, err := ix.lock(uid, gid)
	if err != nil {
		return err
	}
	defer unlock()
	if err := ix.makeFile(uid, gid); err != nil {
		return err
	}
	if err := ix.connect(); err != nil {
		if !corrupt(err) {
			return err
		}
		return ix.rebuildLocked(err, uid, gid)
	}
	return nil
}

// lock holds index/search.lock while the database is made, put in WAL mode and given its tables, or set aside:
// SQLite answers "database is locked" at once, not after its busy timeout, to a second process switching a new
// database to WAL while the first does.
func (ix *Index) lock(uid, gid int) (unlock func(), err error) {
	fd, err := ix.dir.OpenAt(lockName, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("index: %s/%s: %w", ix.dir.Name(), lockName, err)
	}
	if os.Geteuid() == 0 {
		_ = unix.Fchown(fd, uid, gid)
	}
	for {
		if err = unix.Flock(fd, unix.LOCK_EX); err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("index: %s/%s: %w", ix.dir.Name(), lockName, err)
	}
	return func() { unix.Close(fd) }, nil // closing releases it
}

// makeFile makes the database file, empty, when missing: owned by the store's owner, so the journal files SQLite
// makes beside it (which a root process gives the database's owner) are the owner's too.
func (ix *Index) makeFile(uid, gid int) error {
	fd, err := ix.dir.OpenAt(DBName, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, 0o600)
	switch {
	case err == nil:
		if os.Geteuid() == 0 {
			err = unix.Fchown(fd, uid, gid)
		}
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("index: %s: %w", ix.Path(), err)
		}
	case err != unix.EEXIST:
		return fmt.Errorf("index: %s: %w", ix.Path(), err)
	}
	for _, name := range []string{DBName, DBName + "-wal", DBName + "-shm"} {
		st, err := ix.dir.Lstat(name)
		if err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
			return fmt.Errorf("index: %s/%s is not a regular file: remove it and run sessionfs search --reindex", ix.dir.Name(), name)
		}
	}
	return nil
}

// connect opens the database through the index folder's descriptor and readies its tables.
func (ix *Index) connect() error {
	dsn := "file:/proc/self/fd/" + strconv.Itoa(ix.dir.Fd()) + "/" + DBName + "?mode=rw&_txlock=immediate" +
		"&_pragma=busy_timeout(" + strconv.Itoa(int(busyWait/time.Millisecond)) + ")" +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=trusted_schema(0)" +
		"&_pragma=journal_size_limit(" + strconv.Itoa(walLimit) + ")"
	st, err := ix.dir.Lstat(DBName)
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	ix.ino = uint64(st.Ino)
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return err
	}
	ix.db = db
	var version string
	err = db.QueryRow(`SELECT value FROM meta WHERE key = 'schema'`).Scan(&version)
	switch {
	case err == nil && version == schemaVersion:
		return nil
	case err == nil:
		if err := ix.reset(fmt.Sprintf("index: %s is of another version (%s): rebuilding it", ix.Path(), version)); err != nil {
			return err
		}
		// The old tables' pages go back to the disk: an index of an older version may be what a session grew.
		// (Another process reading it meanwhile keeps them: the next rebuild's rows reuse them.)
		_, _ = db.Exec(`VACUUM`)
		return nil
	case errors.Is(err, sql.ErrNoRows) || noTable(err):
		return ix.create() // new: a second process making it at the same time makes the same tables
	}
	return err
}

// create makes the tables that are missing.
func (ix *Index) create() error {
	tx, err := ix.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(schema); err != nil {
		return err
	}
	if _, err := tx.Exec(`INSERT OR IGNORE INTO meta(key, value) VALUES('schema', ?), ('gen', ?), ('cost', '0')`, schemaVersion, newGen()); err != nil {
		return err
	}
	return tx.Commit()
}

// reset makes the tables anew, empty (warning with why when it is not empty), in a new generation: a process
// that listed sessions before it records no session as indexed after it (setSig).
func (ix *Index) reset(why string) error {
	if why != "" {
		ix.warn(why)
	}
	tx, err := ix.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, s := range []string{`DROP TABLE IF EXISTS entry`, `DROP TABLE IF EXISTS conv`, `DROP TABLE IF EXISTS sess`,
		`DROP TABLE IF EXISTS str`, schema} {
		if _, err := tx.Exec(s); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(`INSERT INTO meta(key, value) VALUES('schema', ?), ('gen', ?), ('cost', '0')
		ON CONFLICT(key) DO UPDATE SET value = excluded.value`, schemaVersion, newGen()); err != nil {
		return err
	}
	return tx.Commit()
}

// newGen names a generation of the index: random, so a database rebuilt anew (its tables made again, here or by
// another process) never has the generation a process caught up in before.
func newGen() string {
	return strconv.FormatUint(rand.Uint64(), 36)
}

// rebuild sets a database that does not read aside (index/search.db.corrupt, replacing an older one) and makes
// a new one: the next catch-up fills it. Under the lock, unless the database was replaced since this process
// opened it (another found it damaged first and rebuilt it): then it opens that one.
func (ix *Index) rebuild(cause error) error {
	uid, gid, err := ix.owner()
	if err != nil {
		return err
	}
	unlock, err := ix.lock(uid, gid)
	if err != nil {
		return err
	}
	defer unlock()
	if st, err := ix.dir.Lstat(DBName); err == nil && uint64(st.Ino) != ix.ino {
		if ix.db != nil {
			ix.db.Close()
			ix.db = nil
		}
		return ix.connect()
	}
	return ix.rebuildLocked(cause, uid, gid)
}

func (ix *Index) rebuildLocked(cause error, uid, gid int) error {
	ix.warn(fmt.Sprintf("index: %s is damaged (%v): moved aside to %s.corrupt and rebuilt", ix.Path(), cause, DBName))
	if ix.db != nil {
		ix.db.Close()
		ix.db = nil
	}
	if err := ix.dir.Rename(DBName, DBName+".corrupt", 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("index: %s is damaged and could not be moved aside: %w", ix.Path(), err)
	}
	for _, side := range []string{"-wal", "-shm"} {
		if err := ix.dir.Remove(DBName + side); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("index: %w", err)
		}
	}
	if err := ix.makeFile(uid, gid); err != nil {
		return err
	}
	return ix.connect()
}

// owner is the store owner's uid and gid: the index's files are theirs.
func (ix *Index) owner() (uid, gid int, err error) {
	root, err := layout.OpenDir(ix.store.Root)
	if err != nil {
		return -1, -1, err
	}
	defer root.Close()
	return root.Owner()
}

// corrupt reports whether err says the database file is damaged or not a database at all.
func corrupt(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff
	return code == sqlite3.SQLITE_CORRUPT || code == sqlite3.SQLITE_NOTADB
}

// noTable reports whether err is SQLite's "no such table" (a new, empty database).
func noTable(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_ERROR && strings.Contains(se.Error(), "no such table")
}
