package opencode

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/confine"
	"github.com/sessionfs/sessionfs/layout"
)

// dbRel is the database's path below the session's folder.
const dbRel = dir + "/" + DB

// sidecars are the files SQLite keeps beside a database. SQLite opens them by name: a session could put a FIFO
// there (an open that never returns) or a link.
var sidecars = []string{"-wal", "-shm", "-journal"}

// maxCopy bounds the database and log a read copies (a session could make them as large as its disk).
const maxCopy = 1 << 30

// open opens a private copy of the session's opencode database, read only, as untrusted (openDB: refused unless
// its schema is plain tables, a's among them; its statements within a.within). It returns fs.ErrNotExist when
// there is no database.
func open(sess *layout.Dir, a access) (*db, func(), error) {
	p, remove, err := privateCopy(sess)
	if err != nil {
		return nil, nil, err
	}
	d, err := openDB(p, a)
	if err != nil {
		remove()
		return nil, nil, fmt.Errorf("%s: %w", dbRel, err)
	}
	return d, func() { d.Close(); remove() }, nil
}

// privateCopy copies the session's opencode database and its log into a folder of this process's, and returns
// the copy's path and what removes it. The database's folder is reached beneath sess with no symlink followed,
// and the copy is made by descriptor, so SQLite opens nothing of the session's. It returns fs.ErrNotExist when
// there is no database.
func privateCopy(sess *layout.Dir) (string, func(), error) {
	dir, err := sess.Sub(path.Dir(dbRel))
	if err != nil {
		return "", nil, err
	}
	defer dir.Close()
	base := path.Base(dbRel)
	if err := regular(dir, base); err != nil {
		return "", nil, err
	}
	tmp, err := os.MkdirTemp("", "sessionfs-opencode-")
	if err != nil {
		return "", nil, err
	}
	if err := snapshot(dir, base, tmp, maxCopy); err != nil {
		os.RemoveAll(tmp)
		return "", nil, err
	}
	return filepath.Join(tmp, base), func() { os.RemoveAll(tmp) }, nil
}

// update runs fn with the session's database open for SQLite to change in place (a launch's Follow, an import's
// merge), as it must: an opencode may be running on it. It is opened as untrusted (openDB, with a: a schema with
// a view or a trigger is refused, and the authorizer keeps any that appears later from running). It goes ahead
// only when the database and the files beside it are regular files (or missing), and fn runs on a thread Landlock confines to the database's folder
// and to mine (folders of this process's own fn attaches): SQLite opens the database and its log by name, and
// turns the folder's /proc/self/fd path into the path it stands for, so a session's process that puts a link
// there (or in place of a folder above it) after the check would otherwise lead the write out of the session
// (TestSwappedDatabase). With no Landlock in the kernel, nothing is changed. It returns fs.ErrNotExist when
// there is no database.
func update(sess *layout.Dir, mine []int, a access, fn func(d *db) error) error {
	dir, err := sess.Sub(path.Dir(dbRel))
	if err != nil {
		return err
	}
	keep := false
	defer func() {
		if !keep {
			dir.Close()
		}
	}()
	base := path.Base(dbRel)
	if err := regular(dir, base); err != nil {
		return err
	}
	if err := sidecarsRegular(dir, base); err != nil {
		return err
	}
	if checked != nil {
		checked(dir)
	}
	file := fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), base)
	a.write = true
	beneath := append([]int{dir.Fd()}, mine...)
	done := make(chan error, 1)
	go func() {
		done <- confine.Beneath(func() error {
			d, err := openDB(file, a)
			if err != nil {
				return fmt.Errorf("%s left as it is: %w", dbRel, err)
			}
			err = fn(d)
			if cerr := d.Close(); err == nil {
				err = cerr
			}
			return err
		}, beneath...)
	}()
	if err = wait(dir, base, done); errors.Is(err, errStuck) {
		keep = true // the update given up on may still open files through dsn's descriptor
		return err
	}
	chownSidecars(sess)
	if errors.Is(err, confine.ErrNoLandlock) {
		return fmt.Errorf("%s left as it is: changing a session's database safely needs Landlock, and %w", dbRel, err)
	}
	return err
}

// checked, in tests, runs between the check of the files and SQLite's opens: where a session's process may swap
// them.
var checked func(dir *layout.Dir)

// errStuck is an update left waiting on SQLite: a FIFO put in place of its journal after the check (SQLite opens it
// by name, and an open of a FIFO waits for a writer), or a lock held past busy_timeout's wait.
var errStuck = errors.New("SQLite did not finish")

// stuckAfter bounds an update: past busy_timeout (10 s), a session's opencode holding its lock or not.
var stuckAfter = 30 * time.Second

// wait waits for an update's result, and gives up at once when a file beside the database stops being a regular
// file (the update may be waiting on it for good), or after stuckAfter. An update given up on is left on its
// thread, which ends with the process; it wrote nothing (SQLite writes the database only after its journal).
func wait(dir *layout.Dir, base string, done <-chan error) error {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(stuckAfter)
	for {
		select {
		case err := <-done:
			return err
		case <-deadline:
			return fmt.Errorf("%s left as it is: %w within %s", dbRel, errStuck, stuckAfter)
		case <-tick.C:
			if err := sidecarsRegular(dir, base); err != nil {
				return fmt.Errorf("%s left as it is: %w (%v)", dbRel, errStuck, err)
			}
		}
	}
}

// sidecarsRegular checks that each file SQLite keeps beside the database base is a regular file, if it is there.
func sidecarsRegular(dir *layout.Dir, base string) error {
	for _, side := range sidecars {
		if err := regular(dir, base+side); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// regular checks that name in dir is a regular file, without following it.
func regular(dir *layout.Dir, name string) error {
	st, err := dir.Lstat(name)
	if err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%s/%s: not a regular file", path.Dir(dbRel), name)
	}
	return nil
}

// snapshot copies the database base in dir and its log (if any) into the folder tmp under the same names, by
// descriptor (copyOut), what their headers say of them (header.go: a file whose header is not SQLite's or says
// another size is refused in place), the two within limit bytes (< 0: any size). An opencode running meanwhile may
// checkpoint its log into the database between the two copies, pairing a database with a log that no longer goes
// with it: the copy is made again while the database changed during it (a header read as a checkpoint wrote it
// too).
func snapshot(dir *layout.Dir, base, tmp string, limit int64) error {
	for try := 1; ; try++ {
		before, err := dir.Lstat(base)
		if err != nil {
			return err
		}
		var pageSize int64
		n, err := copyOut(dir, base, filepath.Join(tmp, base), limit, func(f *os.File, size int64) (int64, error) {
			var n int64
			var err error
			pageSize, n, err = dbSize(f, size)
			return n, err
		})
		if err == nil {
			left := limit
			if limit >= 0 {
				left = limit - n
			}
			_, err = copyOut(dir, base+"-wal", filepath.Join(tmp, base+"-wal"), left, func(f *os.File, size int64) (int64, error) {
				return walSize(f, size, pageSize)
			})
			if errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
		}
		after, aerr := dir.Lstat(base)
		if aerr != nil {
			return aerr
		}
		same := before.Ino == after.Ino && before.Size == after.Size && before.Mtim == after.Mtim && before.Ctim == after.Ctim
		if err != nil && (!errors.Is(err, errHeader) || same) {
			return fmt.Errorf("%s/%s: %w", dir.Name(), base, err)
		}
		if err == nil && same {
			return nil
		}
		if try == 10 {
			return fmt.Errorf("%s/%s: written to as it was copied, %d times", dir.Name(), base, try)
		}
		os.Remove(filepath.Join(tmp, base))
		os.Remove(filepath.Join(tmp, base+"-wal"))
		time.Sleep(time.Duration(try) * 50 * time.Millisecond)
	}
}

// copyOut copies the regular file name in dir to dst (a new file of this process's), by descriptor: no link is
// followed and no FIFO is waited on. size reads the file in place and says how many of its bytes the copy takes
// (a file it refuses is not copied); only those bytes' data is read (holes stay holes). A file that would copy
// more than limit (>= 0) bytes, or has more than limit bytes on disk, is refused. It returns the bytes copied.
func copyOut(dir *layout.Dir, name, dst string, limit int64, size func(f *os.File, size int64) (int64, error)) (int64, error) {
	fd, err := dir.OpenAt(name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	src := os.NewFile(uintptr(fd), name)
	defer src.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, fmt.Errorf("%s: not a regular file", name)
	}
	if limit >= 0 && st.Blocks*512 > limit {
		return 0, fmt.Errorf("%s: %d MiB on disk, more than the %d MiB read", name, st.Blocks*512>>20, limit>>20)
	}
	n, err := size(src, st.Size)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	if limit >= 0 && n > limit {
		return 0, fmt.Errorf("%s: larger than %d MiB", name, limit>>20)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	err = copyData(out, src, n)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

type chats struct{}

// What each reader reads of the database: the tables, with their columns (openDB refuses a database without).
var (
	listShape = map[string][]string{
		"session": {"id", "parent_id", "directory", "time_created", "time_updated"},
		"message": {"id", "session_id", "time_created", "data"},
		"part":    {"id", "message_id", "session_id", "data"},
	}
	countShape  = map[string][]string{"session": {"id", "parent_id"}}
	followShape = map[string][]string{"session": {"directory", "path", "project_id"}, "project": {"id", "worktree"}}
)

// Deadlines of a read: a listing reads every conversation, a count or a look-up one statement.
const (
	listWithin  = 30 * time.Second
	countWithin = 10 * time.Second
)

// warned holds the warnings given: ls counts a session's conversations more than once.
var warned sync.Map

// warn tells the user, once, that the session's conversations are left out of what is read, and why (a
// database refused for its schema, one that did not answer in time).
func warn(sess *layout.Dir, err error) {
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	msg := fmt.Sprintf("%s: its opencode conversations are left out: %v", sess.Name(), err)
	if _, dup := warned.LoadOrStore(msg, true); !dup {
		fmt.Fprintln(os.Stderr, "sessionfs: warning: "+msg)
	}
}

// List reads the session's opencode conversations: each top-level session of opencode's (its subagents' are
// counted as its Subagents).
func (chats) List(sess *layout.Dir) ([]agents.Conversation, error) {
	d, done, err := open(sess, access{within: listWithin, tables: listShape})
	if err != nil {
		warn(sess, err)
		return nil, nil // none, or not one to read: as a missing transcript folder
	}
	defer done()
	cs, err := list(d, path.Join(sess.Name(), dbRel))
	if err != nil {
		warn(sess, fmt.Errorf("%s: %w", dbRel, err))
	}
	return cs, nil
}

// list reads the top-level conversations of the database d (at where, for Path): what it read before an error
// too.
func list(d *db, where string) ([]agents.Conversation, error) {
	var out []agents.Conversation
	err := d.each(`SELECT s.id, s.directory, s.time_created, s.time_updated,
		(SELECT count(*) FROM session c WHERE c.parent_id = s.id),
		(SELECT coalesce(sum(length(m.data)), 0) FROM message m WHERE m.session_id = s.id) +
		(SELECT coalesce(sum(length(p.data)), 0) FROM part p WHERE p.session_id = s.id)
		FROM session s WHERE s.parent_id IS NULL ORDER BY s.time_updated DESC`, nil, func(rows *sql.Rows) error {
		var c agents.Conversation
		var dir string
		var created, updated int64
		if rows.Scan(&c.ID, &dir, &created, &updated, &c.Subagents, &c.Size) != nil {
			return nil
		}
		c.Agent, c.Path = Agent.Name, where
		c.At(ms(created))
		c.At(ms(updated))
		c.AddCwd(dir)
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range out {
		if err := messages(d, &out[i]); err != nil {
			return out[:i], err
		}
	}
	return out, nil
}

// messages reads a conversation's messages into c: their count, the cwds they ran in, the first prompt.
func messages(d *db, c *agents.Conversation) error {
	first := ""
	err := d.each(`SELECT id, time_created, data FROM message WHERE session_id = ? ORDER BY time_created, id`, []any{c.ID},
		func(rows *sql.Rows) error {
			var id, data string
			var created int64
			if rows.Scan(&id, &created, &data) != nil {
				c.Malformed++
				return nil
			}
			var m struct {
				Role string `json:"role"`
				Path struct {
					Cwd string `json:"cwd"`
				} `json:"path"`
			}
			if json.Unmarshal([]byte(data), &m) != nil {
				c.Malformed++
				return nil
			}
			if m.Role != "user" && m.Role != "assistant" {
				return nil
			}
			c.Messages++
			c.At(ms(created))
			c.AddCwd(m.Path.Cwd)
			if first == "" && m.Role == "user" {
				first = id
			}
			return nil
		})
	if err != nil || first == "" {
		return err
	}
	ts, err := texts(d, first)
	c.FirstPrompt = strings.Join(ts, " ")
	return err
}

// ms is a time opencode recorded (milliseconds since the epoch); none is the zero time.
func ms(t int64) time.Time {
	if t <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(t)
}

// texts are the text parts of message id, as the user or the model wrote them (not what opencode added itself).
func texts(d *db, id string) ([]string, error) {
	var out []string
	err := d.each(`SELECT data FROM part WHERE message_id = ? ORDER BY id`, []any{id}, func(rows *sql.Rows) error {
		var data string
		if rows.Scan(&data) != nil {
			return nil
		}
		var p part
		if json.Unmarshal([]byte(data), &p) == nil && p.Type == "text" && !p.Synthetic && p.Text != "" {
			out = append(out, p.Text)
		}
		return nil
	})
	return out, err
}

// part is one part of a message: {"type": "text"|"tool"|"step-start"|..., "text", "tool", "state"}.
type part struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Synthetic bool            `json:"synthetic"`
	Tool      string          `json:"tool"`
	State     json.RawMessage `json:"state"`
	Time      *struct {
		Start int64 `json:"start"`
	} `json:"time"`
}

// Count counts the session's top-level opencode conversations.
func (chats) Count(sess *layout.Dir) int {
	d, done, err := open(sess, access{within: countWithin, tables: countShape})
	if err != nil {
		warn(sess, err)
		return 0
	}
	defer done()
	var n int
	if err := d.row(`SELECT count(*) FROM session WHERE parent_id IS NULL`, nil, &n); err != nil {
		warn(sess, fmt.Errorf("%s: %w", dbRel, err))
		return 0
	}
	return n
}

// Holds reports whether the session's database holds opencode session id (any of them, a subagent's too).
func (chats) Holds(sess *layout.Dir, id string) (string, bool) {
	if !strings.HasPrefix(id, "ses_") {
		return "", false
	}
	d, done, err := open(sess, access{within: countWithin, tables: countShape})
	if err != nil {
		warn(sess, err)
		return "", false
	}
	defer done()
	var n int
	if err := d.row(`SELECT count(*) FROM session WHERE id = ?`, []any{id}, &n); err != nil {
		warn(sess, fmt.Errorf("%s: %w", dbRel, err))
		return "", false
	}
	return dbRel, n > 0
}

// Follow moves every conversation in the session's opencode database to cwd, the cwd opencode is about to start
// in (as it sees it): opencode lists, continues (--continue) and resumes (--session) only the conversations whose
// directory is its cwd exactly. Each conversation's path (its cwd below its project's worktree) is moved too where
// cwd lies in that worktree. Nothing else changes: a conversation keeps its project (opencode's, of the git
// repository it began in), so one begun in another repository stays out of the list. No database (opencode never
// ran in the session) is nothing to do.
func Follow(sess *layout.Dir, cwd string) error {
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real // opencode's cwd is the kernel's, links resolved
	}
	err := update(sess, nil, access{within: stuckAfter, tables: followShape}, func(d *db) error { return follow(d, cwd) })
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// follow moves d's conversations to cwd (Follow), in one transaction.
func follow(d *db, cwd string) error {
	err := d.transaction(func() error {
		if err := d.exec(`UPDATE session SET directory = ? WHERE directory IS NOT ?`, cwd, cwd); err != nil {
			return err
		}
		worktrees := map[string]string{}
		err := d.each(`SELECT id, worktree FROM project`, nil, func(rows *sql.Rows) error {
			var id, wt string
			if rows.Scan(&id, &wt) == nil {
				worktrees[id] = wt
			}
			return nil
		})
		if err != nil {
			return err
		}
		for id, wt := range worktrees {
			rel, err := filepath.Rel(wt, cwd)
			if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
				continue
			}
			if rel == "." {
				rel = ""
			}
			if err := d.exec(`UPDATE session SET path = ? WHERE project_id = ? AND path IS NOT ?`, rel, id, rel); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", dbRel, err)
	}
	return nil
}

// chownSidecars gives the database's journal files, should this process have made them (a reader of a WAL
// database makes them too), to the session's owner: opencode, running as that user, must write them.
func chownSidecars(sess *layout.Dir) {
	uid, gid, err := sess.Owner()
	if err != nil {
		return
	}
	dir, err := sess.Sub(path.Dir(dbRel))
	if err != nil {
		return
	}
	defer dir.Close()
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		_ = unix.Fchownat(dir.Fd(), path.Base(dbRel)+suffix, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
	}
}
