package opencode

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// DefaultFrom is the database opencode keeps for this user: $XDG_DATA_HOME/opencode/opencode.db, else
// ~/.local/share/opencode/opencode.db.
func DefaultFrom() (string, error) {
	if v := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(v) {
		return filepath.Join(v, "opencode", "opencode.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "share", "opencode", "opencode.db"), nil
}

// Import adopts the conversations of a user's opencode database (opts.From: the database, or the folder holding
// opencode.db; DefaultFrom when empty) into the store: each top-level conversation with its subagents' sessions,
// their messages, parts, events and the rest of their rows, and its project, as Importer places them (one
// session per conversation, named after its id, unless Into). The database is read from a private copy, so a
// running opencode is not disturbed. A session with no database gets one of the source's schema (its
// migrations recorded, so opencode starts on it as it is) holding only what was imported; into a session's own
// database the rows are merged, in one transaction, when its schema is the source's (the same opencode version),
// else refused. No login is ever copied (account, credential, control_account), nor a share's secret. Running
// it again imports a conversation only when the source has it newer than the session; the conversation's cwd
// stays as it was (Follow moves it at each launch) and is recorded among the session's cwds.
func Import(store *layout.Store, opts agents.ImportOptions) (agents.ImportReport, error) {
	im, err := agents.NewImporter(store, opts)
	if err != nil {
		return agents.ImportReport{}, err
	}
	from, err := sourcePath(opts.From)
	if err != nil {
		return im.Report, err
	}
	src, err := openSource(from)
	if err != nil {
		return im.Report, err
	}
	defer src.close()
	all, err := list(src.db, from)
	if err != nil {
		return im.Report, fmt.Errorf("opencode database %s: %w", from, err)
	}
	var convs []agents.Conversation
	for _, c := range all {
		switch {
		case layout.ValidateID(c.ID) != nil:
			im.Report.Malformed = append(im.Report.Malformed, fmt.Sprintf("%s: %q is not a conversation id", from, c.ID))
		case agents.InProject(c.Cwds, opts.Project):
			convs = append(convs, c)
		}
	}
	ids := make([]string, len(convs))
	for i, c := range convs {
		ids[i] = c.ID
	}
	var owned map[string]string
	owner := func(conv string) string {
		if owned == nil {
			owned = owners(store)
		}
		return owned[conv]
	}
	err = im.Run(ids, owner, func(i int, id string) error { return src.one(im, convs[i], id) })
	return im.Report, err
}

// sourcePath is the database --from names: the file itself, or opencode.db in the folder it names.
func sourcePath(from string) (string, error) {
	if from == "" {
		return DefaultFrom()
	}
	if st, err := os.Stat(from); err == nil && st.IsDir() {
		return filepath.Join(from, path.Base(DB)), nil
	}
	return from, nil
}

// source is the database imported from, as a private copy of its own.
type source struct {
	path     string // as given, for messages
	tmp      string // the private folder
	clean    string // the copy, its log folded in
	db       *db    // clean, open as untrusted
	template string // clean without rows but opencode's bookkeeping: made on first need
	plan     []tableCopy
	made     int // databases made from template so far
	// held caches, per session of the store, the latest change of each conversation its database holds: a
	// session's database is copied once to be compared, however many conversations go into it.
	held map[string]map[string]int64
}

// What an import reads of a database: its conversations (list), their sessions' tree and latest change (tree).
var importShape = map[string][]string{
	"session": {"id", "parent_id", "project_id", "directory", "time_created", "time_updated"},
	"message": {"id", "session_id", "time_created", "time_updated", "data"},
	"part":    {"id", "message_id", "session_id", "time_updated", "data"},
}

// Deadlines of an import's statements: the source's, renewed for each conversation; a session's, read to
// compare (stamps).
const (
	convWithin  = 10 * time.Minute
	stampWithin = 5 * time.Minute
)

// openSource copies the database at p and its log privately (by descriptor: no link is followed, no FIFO
// waited on; the copy is made again if a running opencode wrote meanwhile) and folds them into one file; both
// are opened as untrusted (openDB: a view, a trigger, a table not of the shape read refuse the import).
func openSource(p string) (*source, error) {
	dir, err := layout.OpenDir(filepath.Dir(p))
	if err != nil {
		return nil, fmt.Errorf("opencode database %s: %w", p, err)
	}
	defer dir.Close()
	tmp, err := os.MkdirTemp("", "sessionfs-opencode-import-")
	if err != nil {
		return nil, err
	}
	src := &source{path: p, tmp: tmp, clean: filepath.Join(tmp, "clean.db"), held: map[string]map[string]int64{}}
	snap := filepath.Join(tmp, "snapshot")
	if err := os.Mkdir(snap, 0o700); err != nil {
		src.close()
		return nil, err
	}
	base := filepath.Base(p)
	if err := snapshot(dir, base, snap, -1); err != nil {
		src.close()
		return nil, fmt.Errorf("opencode database %s: %w", p, err)
	}
	err = vacuumFile(filepath.Join(snap, base), src.clean, importShape)
	os.RemoveAll(snap)
	if err == nil {
		src.db, err = openDB(src.clean, access{attach: 1, within: convWithin, tables: importShape})
	}
	if err == nil {
		src.plan = planCopy(src.db)
	}
	if err != nil {
		src.close()
		return nil, fmt.Errorf("opencode database %s: %w", p, err)
	}
	return src, nil
}

func (src *source) close() {
	if src.db != nil {
		src.db.Close()
	}
	os.RemoveAll(src.tmp)
}

// vacuumFile writes the database at p (a private copy, with its log; opened as untrusted, want among its
// tables) as one new file, dst.
func vacuumFile(p, dst string, want map[string][]string) error {
	d, err := openDB(p, access{attach: 1, within: convWithin, tables: want})
	if err != nil {
		return err
	}
	defer d.Close()
	return d.vacuumInto(dst)
}

// one imports conversation c into session id.
func (src *source) one(im *agents.Importer, c agents.Conversation, id string) error {
	sess, err := im.Session(id, c.ID, Agent.Name)
	if sess == nil || err != nil {
		return err
	}
	defer sess.Close()
	src.db.deadline(convWithin)
	ids, stamp, err := tree(src.db, c.ID)
	if err != nil {
		return fmt.Errorf("%s: conversation %s: %w", src.path, c.ID, err)
	}
	if src.held[id] == nil {
		if src.held[id], err = stamps(sess); err != nil {
			return fmt.Errorf("import %s into session %s: %w", c.ID, id, err)
		}
	}
	have, held := src.held[id][c.ID]
	if !im.Copies(c.ID, held && have >= stamp) {
		return nil
	}
	if err := agents.Prepare(sess, Agent, im.Workspaces(id)); err != nil {
		return err
	}
	if err := src.into(sess, ids); err != nil {
		return fmt.Errorf("import %s into session %s: %w", c.ID, id, err)
	}
	src.held[id][c.ID] = stamp
	_, err = im.Store.Update(id, func(m *layout.Meta) error {
		for _, cwd := range c.Cwds {
			m.AddCwd(cwd)
		}
		return nil
	})
	return err
}

// maxTree bounds the sessions of one conversation (its own and its subagents', theirs): SQLite's limit on the
// variables of one statement, which lists them.
const maxTree = 10_000

// tree returns conversation conv's sessions in d (its own and its subagents', theirs) and its newest change: the
// latest time_updated of those sessions, their messages and parts. The tree is walked here, one level a
// statement, rather than by a recursive query (the authorizer denies what a named subquery holds, as it does a
// view's); a cycle a hostile database may hold ends, as each session is taken once.
func tree(d *db, conv string) (ids []string, stamp int64, err error) {
	seen := map[string]bool{}
	for level := []string{conv}; len(level) > 0; {
		var next []string
		for _, id := range level {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		if len(ids) > maxTree {
			return nil, 0, fmt.Errorf("conversation %s: more than %d sessions", conv, maxTree)
		}
		kids, err := d.column(`SELECT id FROM session WHERE parent_id IN (`+marks(len(level))+`)`, anys(level)...)
		if err != nil {
			return nil, 0, err
		}
		for _, k := range kids {
			if !seen[k] {
				next = append(next, k)
			}
		}
		level = next
	}
	if ids, err = d.column(`SELECT id FROM session WHERE id IN (`+marks(len(ids))+`)`, anys(ids)...); err != nil {
		return nil, 0, err // the sessions there are (conv itself may not be)
	}
	if len(ids) == 0 {
		return nil, 0, nil
	}
	stamp, err = newest(d, ids)
	return ids, stamp, err
}

// newest is the latest change of sessions ids in d (0 for none).
func newest(d *db, ids []string) (int64, error) {
	in := marks(len(ids))
	var stamp sql.NullInt64
	args := anys(ids)
	err := d.row(`SELECT max(x) FROM (
		SELECT max(time_updated) x FROM session WHERE id IN (`+in+`)
		UNION ALL SELECT max(time_updated) FROM message WHERE session_id IN (`+in+`)
		UNION ALL SELECT max(time_updated) FROM part WHERE session_id IN (`+in+`))`, append(append(args, args...), args...), &stamp)
	return stamp.Int64, err
}

// marks are n placeholders, comma-separated.
func marks(n int) string { return strings.TrimSuffix(strings.Repeat("?,", n), ",") }

// anys are ss as arguments of a statement.
func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// stamps reads, from a private copy of the session's database, the latest change of each conversation it holds
// (none without a database).
func stamps(sess *layout.Dir) (map[string]int64, error) {
	out := map[string]int64{}
	d, done, err := open(sess, access{within: stampWithin, tables: importShape})
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer done()
	convs, err := d.column(`SELECT id FROM session WHERE parent_id IS NULL`)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dbRel, err)
	}
	for _, conv := range convs {
		if _, out[conv], err = tree(d, conv); err != nil {
			return nil, fmt.Errorf("%s: %w", dbRel, err)
		}
	}
	return out, nil
}

// errMeanwhile: opencode made the session's database while the import was making one.
var errMeanwhile = errors.New("made meanwhile")

// into writes the rows of sessions ids into the session's database: merged into it if it has one, else in a
// new one.
func (src *source) into(sess *layout.Dir, ids []string) error {
	for range 3 {
		// The source is attached from this process's own folder, which the confined thread may read too.
		mine, err := unix.Open(src.tmp, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		err = update(sess, []int{mine}, access{attach: 1, within: stuckAfter}, func(d *db) error { return src.merge(d, ids, true) })
		unix.Close(mine)
		if errors.Is(err, fs.ErrNotExist) {
			if err := src.create(sess, ids); !errors.Is(err, errMeanwhile) {
				return err
			}
			continue // merged into the one made meanwhile
		}
		return err
	}
	return fmt.Errorf("%s: made and removed again and again as it was imported into", dbRel)
}

// merge copies the rows of sessions ids from the source into d, in one transaction. check compares d's schema
// with the source's first (a database of the session's; one made from the source has its schema).
func (src *source) merge(d *db, ids []string, check bool) error {
	// The source is this process's own copy: attached by its private path, never a path of the session's.
	theirs, err := d.attach(src.clean, "src", nil)
	if err != nil {
		return fmt.Errorf("%s: %w", dbRel, err)
	}
	defer d.detach("src")
	if check {
		if err := sameSchema(d, theirs); err != nil {
			return fmt.Errorf("%s: another opencode version's database than %s (%w): run the same opencode version on both, or import into a new session (--into NEW-ID)", dbRel, src.path, err)
		}
	}
	if err := d.transaction(func() error { return copyRows(d, src.plan, ids) }); err != nil {
		return fmt.Errorf("%s: %w", dbRel, err)
	}
	return nil
}

// create gives the session a database of its own holding sessions ids: made privately from the source's
// template, then moved into place under a name no other file has (an opencode that made one meanwhile keeps
// its own, and the rows are merged into it instead).
func (src *source) create(sess *layout.Dir, ids []string) error {
	uid, gid, err := sess.Owner()
	if err != nil {
		return err
	}
	folder, base := path.Dir(dbRel), path.Base(dbRel)
	if err := sess.MkdirAll(folder, 0o755, uid, gid); err != nil {
		return err
	}
	for _, suffix := range sidecars {
		// A log without its database would be replayed into the new one.
		_, err := sess.Lstat(dbRel + suffix)
		if err == nil {
			return fmt.Errorf("%s%s is there without its database: left as it is, nothing imported", dbRel, suffix)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	made, err := src.fresh(ids)
	if err != nil {
		return err
	}
	defer os.Remove(made)
	f, err := os.Open(made)
	if err != nil {
		return err
	}
	defer f.Close()
	tmp := fmt.Sprintf("%s/.%s.import-%d", folder, base, os.Getpid())
	if err := sess.WriteAtomicFrom(tmp, f, 0o644, uid, gid, time.Time{}); err != nil {
		return err
	}
	err = sess.Rename(tmp, dbRel, unix.RENAME_NOREPLACE)
	if err != nil {
		_ = sess.Remove(tmp)
	}
	if errors.Is(err, unix.EEXIST) {
		return errMeanwhile
	}
	return err
}

// fresh makes a new database in the private folder holding only sessions ids' rows and opencode's migration
// bookkeeping, every freed page gone (VACUUM), and returns its path.
func (src *source) fresh(ids []string) (string, error) {
	if src.template == "" {
		p := filepath.Join(src.tmp, "template.db")
		if _, err := rebuild(src.clean, p, bookkeeping); err != nil {
			return "", err
		}
		src.template = p
	}
	src.made++
	p := filepath.Join(src.tmp, fmt.Sprintf("new-%d.db", src.made))
	if err := vacuumFile(src.template, p, nil); err != nil {
		return "", err
	}
	d, err := openDB(p, access{write: true, attach: 1, within: convWithin})
	if err != nil {
		return "", err
	}
	defer d.Close()
	if err := src.merge(d, ids, false); err != nil {
		return "", err
	}
	if err := d.vacuum(); err != nil {
		return "", err
	}
	return p, d.Close()
}

// bookkeeping: the tables of opencode's migrations, whose rows a new database keeps (so opencode finds its
// migrations done).
func bookkeeping(table string) bool { return table == "migration" || table == "data_migration" }

// owners maps each opencode session id held in the store to the session holding it, the first one's where
// several do (agents.Less): each session's database is read once, from a private copy.
func owners(store *layout.Store) map[string]string {
	best := map[string]agents.Holder{}
	ids, _ := store.IDs()
	for _, sid := range ids {
		sess, err := store.OpenSession(sid)
		if err != nil {
			continue
		}
		for _, conv := range heldIDs(sess) {
			if born, ok := sess.Born(dbRel); ok {
				h := agents.Holder{ID: sid, Rel: dbRel, Born: born, Agent: Agent.Name}
				if cur, dup := best[conv]; !dup || agents.Less(h, cur) {
					best[conv] = h
				}
			}
		}
		sess.Close()
	}
	out := make(map[string]string, len(best))
	for conv, h := range best {
		out[conv] = h.ID
	}
	return out
}

// heldIDs lists the opencode session ids of the session's database.
func heldIDs(sess *layout.Dir) []string {
	d, done, err := open(sess, access{within: countWithin, tables: countShape})
	if err != nil {
		warn(sess, err)
		return nil
	}
	defer done()
	ids, err := d.column(`SELECT id FROM session`)
	if err != nil {
		warn(sess, fmt.Errorf("%s: %w", dbRel, err))
		return nil
	}
	return ids
}
