package opencode

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// An opencode database is the session's to write, and so is its schema: a table may be a view that never ends,
// a trigger may run on the UPDATE a launch makes or on the DELETE an export's scrub makes, a trigger may carry
// a name of SQLite's own. Every database sessionfs opens (a session's, the user's it imports from, the copies it
// makes of them) is opened here, as SQLite's "Defense Against the Dark Arts" advises for an untrusted file:
//   - refused unless every object of its schema is a plain table or an index (sqlite_master read whole, each
//     row's SQL read as SQLite will parse it: no view, no trigger, no virtual table, no generated column, no
//     expression index, no name of SQLite's own but its own few), and unless the tables the caller reads are
//     there with the columns it reads;
//   - an authorizer denies whatever a view or a trigger would compile, should one appear after the check (a
//     session's process writes the file under SQLite): no SQL of the session's ever runs;
//   - SQLITE_DBCONFIG_DEFENSIVE, trusted_schema off, cell_size_check on, no memory map, foreign keys off,
//     double-quoted strings off, SQLite's limits lowered (length, SQL length, columns, depth, attached...);
//     modernc's SQLite loads no extension;
//   - one connection, every statement under the handle's deadline (SQLite is interrupted when it passes) and
//     every read under a row cap.

// untrustedDriver is the name the hardened driver is registered under: every connection it opens has the
// authorizer, whoever opens it.
const untrustedDriver = "sqlite-untrusted"

func init() {
	d := &sqlite.Driver{}
	d.RegisterConnectionHook(func(conn sqlite.ExecQuerierContext, _ string) error {
		auth, ok := conn.(sqlite.AuthorizerRegisterer)
		if !ok {
			return errors.New("this SQLite driver has no authorizer")
		}
		return auth.RegisterAuthorizer(authorize(nil))
	})
	sql.Register(untrustedDriver, d)
}

// authorize lets SQLite compile only what this process wrote: anything a view or a trigger holds is denied; no
// view, trigger or virtual table is made; a database is attached or detached only while attaching says so (the
// handle's own code attaching one: ATTACH, VACUUM INTO).
func authorize(attaching *atomic.Bool) sqlite.AuthorizerFn {
	return func(action sqlite.AuthorizerActionCode, _, _, _, triggerOrView string) sqlite.AuthorizerReturnCode {
		if triggerOrView != "" {
			return sqlite.AuthorizerDeny
		}
		switch action {
		case sqlite.AuthCreateTrigger, sqlite.AuthCreateTempTrigger, sqlite.AuthCreateView, sqlite.AuthCreateTempView,
			sqlite.AuthCreateVTable:
			return sqlite.AuthorizerDeny
		case sqlite.AuthAttach, sqlite.AuthDetach:
			if attaching == nil || !attaching.Load() {
				return sqlite.AuthorizerDeny
			}
		}
		return sqlite.AuthorizerOK
	}
}

// limits are SQLite's limits on a connection: lowered to what opencode's rows and sessionfs's statements need
// (a part's data may hold a large tool output). LIMIT_ATTACHED is the caller's (access.attach).
var limits = map[int]int{
	sqlite3.SQLITE_LIMIT_LENGTH:              64 << 20,
	sqlite3.SQLITE_LIMIT_SQL_LENGTH:          1 << 20,
	sqlite3.SQLITE_LIMIT_COLUMN:              200,
	sqlite3.SQLITE_LIMIT_EXPR_DEPTH:          100,
	sqlite3.SQLITE_LIMIT_COMPOUND_SELECT:     8,
	sqlite3.SQLITE_LIMIT_VDBE_OP:             250_000,
	sqlite3.SQLITE_LIMIT_FUNCTION_ARG:        8,
	sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH: 50,
	sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER:     10_000,
	sqlite3.SQLITE_LIMIT_TRIGGER_DEPTH:       1,
	sqlite3.SQLITE_LIMIT_WORKER_THREADS:      0,
}

// maxRows caps the rows one statement may return: a join of a hostile database's tables must not fill memory
// (a variable for tests).
var maxRows = 1_000_000

// maxObjects caps the objects of a schema (opencode's has a few dozen).
const maxObjects = 10_000

// errRefused marks a database refused for its schema.
var errRefused = errors.New("refused")

// errTooMany is a statement that returned more than maxRows rows.
var errTooMany = errors.New("more rows than read at most")

// access is how a database is opened.
type access struct {
	write bool // changed in place (else read only)
	// triggers: a read-only caller's database may hold triggers (Codex's state index has its own). They fire only
	// on a write, which a read-only handle never makes, and the authorizer denies whatever one compiles anyway.
	triggers bool
	create   bool                // a new database of this process's own (write)
	attach   int                 // databases the caller attaches (ATTACH, VACUUM INTO)
	within   time.Duration       // the deadline of all its statements, from the open (deadline renews it)
	tables   map[string][]string // the tables the caller reads, with the columns it reads
}

// db is a database opened by openDB: one connection, its schema vetted.
type db struct {
	pool      *sql.DB
	conn      *sql.Conn
	ctx       context.Context
	cancel    context.CancelFunc
	attaching atomic.Bool // while the handle's own code attaches a database
	schema    vetted      // main's, as vetted
}

// openDB opens the database file p (a path this process made, or a /proc/self/fd path of a folder it holds) as
// untrusted, and vets its schema (see above): a database whose schema is not plain tables of the shape a.tables
// wants is refused (errRefused).
func openDB(p string, a access) (*db, error) {
	mode := "ro"
	switch {
	case a.create:
		mode = "rwc"
	case a.write:
		mode = "rw"
	}
	dsn := "file:" + p + "?mode=" + mode + "&_defensive=1&_dqs=0" +
		"&_pragma=busy_timeout(10000)&_pragma=trusted_schema(0)&_pragma=cell_size_check(1)&_pragma=mmap_size(0)" +
		"&_pragma=foreign_keys(0)&_pragma=recursive_triggers(0)&_pragma=temp_store(2)&_pragma=secure_delete(1)"
	pool, err := sql.Open(untrustedDriver, dsn)
	if err != nil {
		return nil, err
	}
	pool.SetMaxOpenConns(1)
	d := &db{pool: pool}
	d.ctx, d.cancel = context.WithTimeout(context.Background(), a.within)
	if d.conn, err = pool.Conn(d.ctx); err != nil {
		d.Close()
		return nil, err
	}
	err = d.conn.Raw(func(conn any) error {
		auth, ok := conn.(sqlite.AuthorizerRegisterer)
		if !ok {
			return errors.New("this SQLite driver has no authorizer")
		}
		return auth.RegisterAuthorizer(authorize(&d.attaching))
	})
	if err != nil {
		d.Close()
		return nil, err
	}
	for id, v := range limits {
		if _, err := sqlite.Limit(d.conn, id, v); err != nil {
			d.Close()
			return nil, err
		}
	}
	if _, err := sqlite.Limit(d.conn, sqlite3.SQLITE_LIMIT_ATTACHED, a.attach); err != nil {
		d.Close()
		return nil, err
	}
	if d.schema, err = d.vet("main", a.tables, a.triggers && !a.write && !a.create && a.attach == 0); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// Close closes the database.
func (d *db) Close() error {
	var err error
	if d.conn != nil {
		err = d.conn.Close()
	}
	if cerr := d.pool.Close(); err == nil {
		err = cerr
	}
	d.cancel()
	return err
}

// deadline gives the statements from now on a deadline of their own, within from now (an import's long run,
// one conversation at a time).
func (d *db) deadline(within time.Duration) {
	d.cancel()
	d.ctx, d.cancel = context.WithTimeout(context.Background(), within)
}

// exec runs a statement of this process's.
func (d *db) exec(query string, args ...any) error {
	_, err := d.conn.ExecContext(d.ctx, query, args...)
	return d.why(err)
}

// each runs query and calls fn on each row, up to maxRows.
func (d *db) each(query string, args []any, fn func(*sql.Rows) error) error {
	rows, err := d.conn.QueryContext(d.ctx, query, args...)
	if err != nil {
		return d.why(err)
	}
	defer rows.Close()
	for n := 0; rows.Next(); n++ {
		if n == maxRows {
			return errTooMany
		}
		if err := fn(rows); err != nil {
			return err
		}
	}
	return d.why(rows.Err())
}

// row reads the one row query returns into dst.
func (d *db) row(query string, args []any, dst ...any) error {
	return d.why(d.conn.QueryRowContext(d.ctx, query, args...).Scan(dst...))
}

// column reads the one text column of what query returns.
func (d *db) column(query string, args ...any) ([]string, error) {
	var out []string
	err := d.each(query, args, func(rows *sql.Rows) error {
		var v string
		if err := rows.Scan(&v); err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// transaction runs fn in one transaction that takes the write lock at once, committed if fn succeeds.
func (d *db) transaction(fn func() error) error {
	if err := d.exec(`BEGIN IMMEDIATE`); err != nil {
		return err
	}
	if err := fn(); err != nil {
		_, _ = d.conn.ExecContext(context.Background(), `ROLLBACK`)
		return err
	}
	if err := d.exec(`COMMIT`); err != nil {
		_, _ = d.conn.ExecContext(context.Background(), `ROLLBACK`)
		return err
	}
	return nil
}

// why names the deadline when it is what ended a statement.
func (d *db) why(err error) error {
	if err != nil && d.ctx.Err() != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w (%v)", context.DeadlineExceeded, err)
	}
	return err
}

// attach attaches this process's own database file p as name, and vets it as openDB does.
func (d *db) attach(p, name string, want map[string][]string) (vetted, error) {
	d.attaching.Store(true)
	err := d.exec(`ATTACH DATABASE ? AS `+quote(name), p)
	d.attaching.Store(false)
	if err != nil {
		return vetted{}, err
	}
	sc, err := d.vet(name, want, false)
	if err != nil {
		d.detach(name)
	}
	return sc, err
}

// detach detaches the database attached as name.
func (d *db) detach(name string) {
	d.attaching.Store(true)
	_, _ = d.conn.ExecContext(context.Background(), `DETACH DATABASE `+quote(name))
	d.attaching.Store(false)
}

// vacuumInto writes the database (main) as the new file dst of this process's: its pages rewritten, no freed one
// kept.
func (d *db) vacuumInto(dst string) error {
	d.attaching.Store(true) // VACUUM INTO attaches dst
	defer d.attaching.Store(false)
	return d.exec(`VACUUM INTO ?`, dst)
}

// vacuum rewrites the database (main) in place, no freed page kept.
func (d *db) vacuum() error {
	d.attaching.Store(true) // VACUUM attaches the copy it makes
	defer d.attaching.Store(false)
	return d.exec(`VACUUM`)
}
