package opencode

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	_ "modernc.org/sqlite" // opencode's database, read and moved (Follow) in pure Go

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/confine"
	"github.com/sessionfs/sessionfs/layout"
)

// dbRel is the database's path below the session's folder.
const dbRel = dir + "/" + DB

// sidecars are the files SQLite keeps beside a database. SQLite opens them by name: a session could put a FIFO
// there (an open that never returns) or a link.
var sidecars = []string{"-wal", "-shm", "-journal"}

// maxCopy bounds the database a read copies (a session could make it as large as its disk).
const maxCopy = 1 << 30

// open opens a private copy of the session's opencode database, read-only. The session wrote it and may be
// hostile: its schema is not trusted (no SQL functions of it run), its folder is reached beneath sess with no
// symlink followed, and the copy of the database and its log is made by descriptor, so SQLite opens nothing of
// the session's. It returns fs.ErrNotExist when there is no database.
func open(sess *layout.Dir) (*sql.DB, func(), error) {
	dir, err := sess.Sub(path.Dir(dbRel))
	if err != nil {
		return nil, nil, err
	}
	base := path.Base(dbRel)
	if err := regular(dir, base); err != nil {
		dir.Close()
		return nil, nil, err
	}
	tmp, err := os.MkdirTemp("", "sessionfs-opencode-")
	if err != nil {
		dir.Close()
		return nil, nil, err
	}
	err = snapshot(dir, base, tmp, maxCopy)
	dir.Close()
	if err != nil {
		os.RemoveAll(tmp)
		return nil, nil, err
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(tmp, base)+"?mode=ro&_pragma=busy_timeout(10000)&_pragma=trusted_schema(0)")
	if err != nil {
		os.RemoveAll(tmp)
		return nil, nil, err
	}
	db.SetMaxOpenConns(1)
	return db, func() { db.Close(); os.RemoveAll(tmp) }, nil
}

// update runs fn with the session's database open for SQLite to change in place (a launch's Follow, an import's
// merge), as it must: an opencode may be running on it. It goes ahead only when the database and the files
// beside it are regular files (or missing), and fn runs on a thread Landlock confines to the database's folder
// and to mine (folders of this process's own fn attaches): SQLite opens the database and its log by name, and
// turns the folder's /proc/self/fd path into the path it stands for, so a session's process that puts a link
// there (or in place of a folder above it) after the check would otherwise lead the write out of the session
// (TestSwappedDatabase). With no Landlock in the kernel, nothing is changed. It returns fs.ErrNotExist when
// there is no database.
func update(sess *layout.Dir, mine []int, fn func(db *sql.DB) error) error {
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
	dsn := fmt.Sprintf("file:/proc/self/fd/%d/%s?mode=rw&_pragma=busy_timeout(10000)&_pragma=trusted_schema(0)&_pragma=temp_store(2)",
		dir.Fd(), base)
	beneath := append([]int{dir.Fd()}, mine...)
	done := make(chan error, 1)
	go func() {
		done <- confine.Beneath(func() error {
			db, err := sql.Open("sqlite", dsn)
			if err != nil {
				return err
			}
			db.SetMaxOpenConns(1)
			err = fn(db)
			if cerr := db.Close(); err == nil {
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
// descriptor (copyOut), each at most limit bytes (< 0: any size). An opencode running meanwhile may checkpoint
// its log into the database between the two copies, pairing a database with a log that no longer goes with it:
// the copy is made again while the database changed during it.
func snapshot(dir *layout.Dir, base, tmp string, limit int64) error {
	for try := 1; ; try++ {
		before, err := dir.Lstat(base)
		if err != nil {
			return err
		}
		err = copyOut(dir, base, filepath.Join(tmp, base), limit)
		if err == nil {
			err = copyOut(dir, base+"-wal", filepath.Join(tmp, base+"-wal"), limit)
			if errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
		}
		if err != nil {
			return err
		}
		after, err := dir.Lstat(base)
		if err != nil {
			return err
		}
		if before.Ino == after.Ino && before.Size == after.Size && before.Mtim == after.Mtim && before.Ctim == after.Ctim {
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
// followed and no FIFO is waited on. A file larger than limit (>= 0) is refused.
func copyOut(dir *layout.Dir, name, dst string, limit int64) error {
	fd, err := dir.OpenAt(name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	src := os.NewFile(uintptr(fd), name)
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s/%s: not a regular file", dir.Name(), name)
	}
	var r io.Reader = src
	if limit >= 0 {
		if st.Size() > limit {
			return fmt.Errorf("%s/%s: larger than %d MiB", dir.Name(), name, limit>>20)
		}
		r = io.LimitReader(src, limit)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, r)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

type chats struct{}

// List reads the session's opencode conversations: each top-level session of opencode's (its subagents' are
// counted as its Subagents).
func (chats) List(sess *layout.Dir) ([]agents.Conversation, error) {
	db, done, err := open(sess)
	if err != nil {
		return nil, nil // none, or not one to read: as a missing transcript folder
	}
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return list(ctx, db, path.Join(sess.Name(), dbRel)), nil
}

// list reads the top-level conversations of the database db (at where, for Path).
func list(ctx context.Context, db *sql.DB, where string) []agents.Conversation {
	rows, err := db.QueryContext(ctx, `SELECT s.id, s.directory, s.time_created, s.time_updated,
		(SELECT count(*) FROM session c WHERE c.parent_id = s.id),
		(SELECT coalesce(sum(length(m.data)), 0) FROM message m WHERE m.session_id = s.id) +
		(SELECT coalesce(sum(length(p.data)), 0) FROM part p WHERE p.session_id = s.id)
		FROM session s WHERE s.parent_id IS NULL ORDER BY s.time_updated DESC`)
	if err != nil {
		return nil
	}
	var out []agents.Conversation
	for rows.Next() {
		var c agents.Conversation
		var dir string
		var created, updated int64
		if rows.Scan(&c.ID, &dir, &created, &updated, &c.Subagents, &c.Size) != nil {
			continue
		}
		c.Agent, c.Path = Agent.Name, where
		c.At(ms(created))
		c.At(ms(updated))
		c.AddCwd(dir)
		out = append(out, c)
	}
	rows.Close()
	for i := range out {
		messages(ctx, db, &out[i])
	}
	return out
}

// messages reads a conversation's messages into c: their count, the cwds they ran in, the first prompt.
func messages(ctx context.Context, db *sql.DB, c *agents.Conversation) {
	rows, err := db.QueryContext(ctx, `SELECT id, time_created, data FROM message WHERE session_id = ? ORDER BY time_created, id`, c.ID)
	if err != nil {
		return
	}
	first := ""
	for rows.Next() {
		var id, data string
		var created int64
		if rows.Scan(&id, &created, &data) != nil {
			c.Malformed++
			continue
		}
		var m struct {
			Role string `json:"role"`
			Path struct {
				Cwd string `json:"cwd"`
			} `json:"path"`
		}
		if json.Unmarshal([]byte(data), &m) != nil {
			c.Malformed++
			continue
		}
		if m.Role != "user" && m.Role != "assistant" {
			continue
		}
		c.Messages++
		c.At(ms(created))
		c.AddCwd(m.Path.Cwd)
		if first == "" && m.Role == "user" {
			first = id
		}
	}
	rows.Close()
	if first != "" {
		c.FirstPrompt = strings.Join(texts(ctx, db, first), " ")
	}
}

// ms is a time opencode recorded (milliseconds since the epoch); none is the zero time.
func ms(t int64) time.Time {
	if t <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(t)
}

// texts are the text parts of message id, as the user or the model wrote them (not what opencode added itself).
func texts(ctx context.Context, db *sql.DB, id string) []string {
	rows, err := db.QueryContext(ctx, `SELECT data FROM part WHERE message_id = ? ORDER BY id`, id)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var data string
		if rows.Scan(&data) != nil {
			continue
		}
		var p part
		if json.Unmarshal([]byte(data), &p) == nil && p.Type == "text" && !p.Synthetic && p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return out
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
	db, done, err := open(sess)
	if err != nil {
		return 0
	}
	defer done()
	var n int
	if db.QueryRow(`SELECT count(*) FROM session WHERE parent_id IS NULL`).Scan(&n) != nil {
		return 0
	}
	return n
}

// Holds reports whether the session's database holds opencode session id (any of them, a subagent's too).
func (chats) Holds(sess *layout.Dir, id string) (string, bool) {
	if !strings.HasPrefix(id, "ses_") {
		return "", false
	}
	db, done, err := open(sess)
	if err != nil {
		return "", false
	}
	defer done()
	var n int
	if db.QueryRow(`SELECT count(*) FROM session WHERE id = ?`, id).Scan(&n) != nil || n == 0 {
		return "", false
	}
	return dbRel, true
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
	err := update(sess, nil, func(db *sql.DB) error { return follow(db, cwd) })
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// follow moves db's conversations to cwd (Follow), in one transaction.
func follow(db *sql.DB, cwd string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", dbRel, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE session SET directory = ? WHERE directory IS NOT ?`, cwd, cwd); err != nil {
		return fmt.Errorf("%s: %w", dbRel, err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, worktree FROM project`)
	if err != nil {
		return fmt.Errorf("%s: %w", dbRel, err)
	}
	worktrees := map[string]string{}
	for rows.Next() {
		var id, wt string
		if rows.Scan(&id, &wt) == nil {
			worktrees[id] = wt
		}
	}
	rows.Close()
	for id, wt := range worktrees {
		rel, err := filepath.Rel(wt, cwd)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		if rel == "." {
			rel = ""
		}
		if _, err := tx.ExecContext(ctx, `UPDATE session SET path = ? WHERE project_id = ? AND path IS NOT ?`, rel, id, rel); err != nil {
			return fmt.Errorf("%s: %w", dbRel, err)
		}
	}
	return tx.Commit()
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

// credentialTables are the tables of opencode's database that hold logins (its console's accounts and tokens).
var credentialTables = []string{"account", "credential", "control_account"}

// Scrub returns the session's opencode database without its logins: a private copy (the log folded in) with the
// credential tables emptied and the file rewritten, so no freed page keeps them. dropped names the tables that
// held rows.
func Scrub(sess *layout.Dir) (data []byte, dropped []string, err error) {
	db, done, err := open(sess)
	if err != nil {
		return nil, nil, err
	}
	defer done()
	tmp, err := os.MkdirTemp("", "sessionfs-opencode-export-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	clean := filepath.Join(tmp, "opencode.db")
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, clean); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", dbRel, err)
	}
	out, err := sql.Open("sqlite", "file:"+clean+"?_pragma=trusted_schema(0)&_pragma=secure_delete(1)")
	if err != nil {
		return nil, nil, err
	}
	defer out.Close()
	out.SetMaxOpenConns(1)
	for _, table := range credentialTables {
		var n int
		// The table's name from the list above, never from the database.
		if out.QueryRowContext(ctx, `SELECT count(*) FROM "`+table+`"`).Scan(&n) != nil || n == 0 {
			continue // no such table in this version, or empty
		}
		if _, err := out.ExecContext(ctx, `DELETE FROM "`+table+`"`); err != nil {
			return nil, nil, fmt.Errorf("%s: empty %s: %w", dbRel, table, err)
		}
		dropped = append(dropped, table)
	}
	if _, err := out.ExecContext(ctx, `VACUUM`); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", dbRel, err)
	}
	if err := out.Close(); err != nil {
		return nil, nil, err
	}
	data, err = os.ReadFile(clean)
	return data, dropped, err
}
