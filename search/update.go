package search

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents/text"
	"github.com/sessionfs/sessionfs/layout"
)

// inserted counts the entries this process indexed: tests tell an append indexed alone from a whole file.
var inserted atomic.Int64

// MaxFile bounds the conversation files indexed: each change of one is read whole (agents/text reads from the
// start), so a session cannot make every search read gigabytes.
const MaxFile = 512 << 20

// tailLen is how many bytes before the indexed offset of an append-only file are kept: an append must leave them.
const tailLen = 64

// row is a conversation as the index last saw it.
type row struct {
	id             int64
	session, agent string
	src, conv      string
	fstat          fstat
	sig            string
	done, next     int64
	tail           []byte
	cost, read     int64  // what it costs its session's budget, and the bytes read for it (budget.go)
	cut            string // why it is indexed in part ("": whole)
}

func key(agent, src string) string { return agent + "\x00" + src }

// mode is what a conversation needs.
type mode int

const (
	skip mode = iota
	appendNew
	whole
)

// decide says what source s needs given the index's row of it (nil: none yet).
func decide(old *row, s *source) mode {
	switch {
	case old == nil:
		return whole
	case old.fstat == s.st && old.sig == s.sig:
		return skip
	case s.appendOnly && old.sig == s.sig && old.fstat.ino == s.st.ino && s.st.size >= old.done:
		return appendNew
	}
	return whole
}

// Update brings the index of session id up to date (dropping it when the session is gone): what the daemon's
// watcher calls when a session changed.
func Update(store *layout.Store, id string) error {
	ix, err := Open(store, nil)
	if err != nil {
		return err
	}
	defer ix.Close()
	return ix.Update(id)
}

// Update brings the index of session id up to date, or drops it when the session is gone.
func (ix *Index) Update(id string) error {
	if err := layout.ValidateID(id); err != nil {
		return err
	}
	return ix.retry(func() error { return ix.catchUp([]string{id}, false, nil) })
}

// CatchUp brings the whole index up to date with the store: new and changed conversations indexed, those gone
// dropped. progress, when not nil, is told of the conversations indexed of those to index.
func (ix *Index) CatchUp(progress func(done, total int)) error {
	return ix.retry(func() error {
		ids, err := ix.store.IDs()
		if err != nil {
			return err
		}
		return ix.catchUp(ids, true, progress)
	})
}

// CatchUpOrWarn is CatchUp, a failure of which is a warning (what the index answers may be behind), never the
// search's end; it reports whether the index caught up.
func (ix *Index) CatchUpOrWarn(progress func(done, total int)) bool {
	if err := ix.CatchUp(progress); err != nil {
		ix.warn(fmt.Sprintf("the index could not catch up (%v): what it answers may be behind", err))
		return false
	}
	return true
}

// catchUp brings the index of sessions ids up to date; all: ids are every session, the others are dropped. The
// sessions are listed (a stat a file) on several threads while the sessions' hashes are read; only the rows of
// a session whose listing hashes otherwise are read.
func (ix *Index) catchUp(ids []string, all bool, progress func(done, total int)) error {
	var sigs map[string]string
	var gen string
	var sigsErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		sigs, gen, sigsErr = ix.sessionSigs()
	}()
	listings := make([]listing, len(ids))
	gone := make([]bool, len(ids))
	listErrs := make([]error, len(ids))
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range min(listers, len(ids)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(ids); i = int(next.Add(1) - 1) {
				listings[i], gone[i], listErrs[i] = ix.list(ids[i])
			}
		}()
	}
	wg.Wait()
	<-done
	if sigsErr != nil {
		return sigsErr
	}
	var work []sessionWork
	for i, id := range ids {
		if listErrs[i] != nil {
			return listErrs[i]
		}
		old, known := sigs[id]
		delete(sigs, id)
		if gone[i] && !known {
			continue
		}
		sig := listings[i].sig()
		if gone[i] {
			sig = ""
		}
		if known && old == sig && sig != "" {
			continue
		}
		rows, err := ix.rows(id)
		if err != nil {
			return err
		}
		if !gone[i] {
			listings[i].expand(func() (*layout.Dir, error) { return ix.store.OpenSession(id) }, rows)
		}
		work = append(work, sessionWork{id: id, sig: sig, gen: gen, tasks: plan(id, listings[i], rows)})
	}
	if all {
		for id := range sigs { // sessions removed, renamed or trashed
			rows, err := ix.rows(id)
			if err != nil {
				return err
			}
			work = append(work, sessionWork{id: id, gen: gen, tasks: plan(id, listing{}, rows)})
		}
	}
	if err := ix.apply(work, progress); err != nil {
		return err
	}
	if all {
		ix.gen = gen
		if ix.caughtUp != nil {
			ix.caughtUp()
		}
	}
	return nil
}

// sessionWork is what one session needs, and the hash of its listing once done ("": the session is gone); gen is
// the index's generation it was planned in.
type sessionWork struct {
	id, sig, gen string
	tasks        []task
}

// sessionSigs reads every session's hash, and the index's generation, at one time.
func (ix *Index) sessionSigs() (map[string]string, string, error) {
	rs, err := ix.db.Query(`SELECT 1, '', value FROM meta WHERE key = 'gen' UNION ALL SELECT 0, session, sig FROM sess`)
	if err != nil {
		return nil, "", err
	}
	defer rs.Close()
	out := map[string]string{}
	gen := ""
	for rs.Next() {
		var isGen int
		var id, sig string
		if err := rs.Scan(&isGen, &id, &sig); err != nil {
			return nil, "", err
		}
		if isGen == 1 {
			gen = sig
			continue
		}
		out[id] = sig
	}
	return out, gen, rs.Err()
}

// setSig records session id's hash ("" while being indexed: a session has a row before any of its conversations
// does, so one gone is found by its row); gone: the session is gone, its row dropped. Only in the generation
// the work was planned in: after a reset (another process's --reindex) the hash would say indexed what is not.
func (ix *Index) setSig(w sessionWork, sig string, gone bool) error {
	var err error
	if gone {
		_, err = ix.db.Exec(`DELETE FROM sess WHERE session = ? AND (SELECT value FROM meta WHERE key = 'gen') = ?`, w.id, w.gen)
	} else {
		_, err = ix.db.Exec(`INSERT INTO sess(session, sig) SELECT ?, ? WHERE (SELECT value FROM meta WHERE key = 'gen') = ?
			ON CONFLICT(session) DO UPDATE SET sig = excluded.sig`, w.id, sig, w.gen)
	}
	return err
}

// listers is how many sessions are listed at once: listing waits on the disk more than on a CPU.
const listers = 4

// list lists session id's sources; gone: there is no such session.
func (ix *Index) list(id string) (l listing, gone bool, err error) {
	sess, err := ix.store.OpenSession(id)
	if err != nil {
		if errors.Is(err, layout.ErrNotFound) {
			return l, true, nil
		}
		return l, false, err
	}
	defer sess.Close()
	return list(sess), false, nil
}

// Reindex empties the index and builds it again from every conversation of the store.
func (ix *Index) Reindex(progress func(done, total int)) error {
	return ix.retry(func() error {
		if err := ix.reset(""); err != nil {
			return err
		}
		return ix.CatchUp(progress)
	})
}

// retry runs fn, and once more on a database found damaged, rebuilt first.
func (ix *Index) retry(fn func() error) error {
	err := fn()
	if corrupt(err) {
		if err = ix.rebuild(err); err == nil {
			err = fn()
		}
	}
	return err
}

// rows reads the index's rows of session id, by key.
func (ix *Index) rows(id string) (map[string]*row, error) {
	rs, err := ix.db.Query(`SELECT id, session, agent, src, conv, size, ctime, ino, sig, done, next, NULL, cost, read, cut
		FROM conv WHERE session = ?`, id)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := map[string]*row{}
	for rs.Next() {
		r, err := scanRow(rs)
		if err != nil {
			return nil, err
		}
		out[key(r.agent, r.src)] = r
	}
	return out, rs.Err()
}

type scanner interface{ Scan(...any) error }

func scanRow(s scanner) (*row, error) {
	r := &row{}
	err := s.Scan(&r.id, &r.session, &r.agent, &r.src, &r.conv, &r.fstat.size, &r.fstat.ctime, &r.fstat.ino,
		&r.sig, &r.done, &r.next, &r.tail, &r.cost, &r.read, &r.cut)
	return r, err
}

// task is one conversation to index (src set) or to drop (src nil).
type task struct {
	session string
	src     *source
	old     *row // as planned against
}

// plan is what session id needs, given its listing and the index's rows of it.
func plan(id string, l listing, rows map[string]*row) []task {
	var work []task
	seen := map[string]bool{}
	for i := range l.sources {
		s := &l.sources[i]
		k := key(s.agent.Name, s.src)
		seen[k] = true
		if decide(rows[k], s) != skip {
			work = append(work, task{session: id, src: s, old: rows[k]})
		}
	}
	for k, r := range rows {
		if !seen[k] && !l.kept(r.src) {
			work = append(work, task{session: id, old: r})
		}
	}
	return work
}

// apply does the tasks, each conversation in a transaction of its own (another process waits on it, never
// fails), the sessions opened once each. A conversation that cannot be read is left for the next catch-up, with
// a warning (its session's hash is left unset, so the next catch-up looks at it again).
func (ix *Index) apply(work []sessionWork, progress func(done, total int)) error {
	total, done := 0, 0
	for _, w := range work {
		total += len(w.tasks)
	}
	var unread []string
	for _, w := range work {
		if err := ix.setSig(w, "", false); err != nil {
			return err
		}
		failed, err := ix.applySession(w, func() {
			done++
			if progress != nil {
				progress(done, total)
			}
		}, &unread)
		if err != nil {
			return err
		}
		if !failed {
			if err := ix.setSig(w, w.sig, w.sig == ""); err != nil {
				return err
			}
		}
	}
	if progress != nil {
		progress(total, total)
	}
	if len(unread) > 0 {
		more := ""
		if len(unread) > 1 {
			more = fmt.Sprintf(" (and %d more)", len(unread)-1)
		}
		ix.warn(fmt.Sprintf("index: left out for now: %s%s", unread[0], more))
	}
	return nil
}

// applySession does one session's tasks; failed: one could not be read.
func (ix *Index) applySession(w sessionWork, step func(), unread *[]string) (failed bool, err error) {
	var sess *layout.Dir
	defer func() { sess.Close() }()
	for _, t := range w.tasks {
		step()
		if t.src != nil && sess == nil {
			if sess, err = ix.store.OpenSession(w.id); err != nil {
				return true, nil // gone since: the next catch-up drops it
			}
		}
		err := ix.one(sess, t)
		var re readError
		if errors.As(err, &re) {
			*unread = append(*unread, re.Error())
			failed = true
			continue
		}
		if err != nil {
			return failed, err
		}
	}
	return failed, nil
}

// readError is a conversation that could not be read: the session's own doing, never the index's failure.
type readError struct{ err error }

func (e readError) Error() string { return e.err.Error() }

// one does one task in a transaction: the row is read again inside it, since another process may have done the
// work meanwhile.
func (ix *Index) one(sess *layout.Dir, t task) error {
	tx, err := ix.db.Begin() // immediate: the write lock first, so a second writer waits instead of failing
	if err != nil {
		return err
	}
	defer tx.Rollback()
	agent, src := "", ""
	if t.src != nil {
		agent, src = t.src.agent.Name, t.src.src
	} else {
		agent, src = t.old.agent, t.old.src
	}
	old, err := scanRow(tx.QueryRow(`SELECT id, session, agent, src, conv, size, ctime, ino, sig, done, next, tail,
		cost, read, cut FROM conv WHERE session = ? AND agent = ? AND src = ?`, t.session, agent, src))
	if errors.Is(err, sql.ErrNoRows) {
		old = nil
	} else if err != nil {
		return err
	}
	switch {
	case t.src == nil:
		if old != nil {
			if err := drop(tx, old); err != nil {
				return err
			}
		}
	default:
		if err := index(tx, sess, t.session, t.src, old); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// drop removes conversation old, its entries and strings, from the index and from its session's sums.
func drop(tx *sql.Tx, old *row) error {
	if err := empty(tx, old.id); err != nil {
		return err
	}
	if _, err := tx.Exec(`DELETE FROM conv WHERE id = ?`, old.id); err != nil {
		return err
	}
	return account(tx, old.session, old, 0, 0)
}

// empty removes conversation id's entries and strings.
func empty(tx *sql.Tx, id int64) error {
	if _, err := tx.Exec(`DELETE FROM entry WHERE rowid BETWEEN ? AND ?`, id<<convShift, (id+1)<<convShift-1); err != nil {
		return err
	}
	_, err := tx.Exec(`DELETE FROM str WHERE conv = ?`, id)
	return err
}

// index indexes what s holds beyond what old (nil: nothing) indexed: its appended entries, or all of it, within
// the budget its session and the store leave it (budget.go).
func index(tx *sql.Tx, sess *layout.Dir, session string, s *source, old *row) error {
	st, end, tail := s.st, int64(0), []byte(nil)
	m := whole
	if s.rel != "" {
		f, err := sess.OpenRegular(s.rel, -1)
		if err != nil {
			return readError{fmt.Errorf("%s/%s: %w", session, s.rel, err)}
		}
		defer f.Close()
		if st, err = fileStat(f); err != nil {
			return readError{err}
		}
		if st.size+s.more > MaxFile {
			return readError{fmt.Errorf("%s/%s: %d bytes, more than the %d a conversation file may have to be indexed", session, s.rel, st.size+s.more, int64(MaxFile))}
		}
		cur := *s
		cur.st = st
		if m = decide(old, &cur); m == skip {
			return nil
		}
		if m == appendNew && (s.dupOf != "" || !sameTail(f, old)) {
			m = whole // rewritten: what was indexed changed (a second name of a file read elsewhere: nothing to read)
		}
		if s.appendOnly {
			from := int64(0)
			if m == appendNew {
				from = old.done // the appended lines end past what was indexed
			}
			if end, err = lastLineEnd(f, from, st.size); err != nil {
				return readError{err}
			}
			tail = make([]byte, min(end, tailLen))
			if _, err := f.ReadAt(tail, end-int64(len(tail))); err != nil {
				return readError{err}
			}
		}
	} else if old != nil && decide(old, s) == skip {
		return nil
	}
	allowCost, allowRead, why, err := allowance(tx, session, old)
	if err != nil {
		return err
	}
	if m == appendNew {
		return appendEntries(tx, sess, s, old, st, end, tail, allowCost, allowRead, why)
	}
	id, err := reuse(tx, session, s, old)
	if err != nil {
		return err
	}
	w, err := newWriter(tx, id, 0, 0, allowCost, why)
	if err != nil {
		return err
	}
	defer w.close()
	read, cut := int64(0), ""
	if !s.record {
		if s.rel != "" && s.dupOf == "" {
			read = st.size + s.more // a compressed file's size: reading it is bounded by it (agents.MaxInflate)
		}
		if read > allowRead {
			read, cut = 0, readCut(true)
		} else if s.dupOf == "" {
			size := int64(-1)
			if s.appendOnly {
				size = st.size
			}
			if err := w.entries(sess, s, s.rel, "", size, func(e text.Entry) bool {
				return !s.appendOnly || e.Offset < end
			}); err != nil {
				return err
			}
		}
		// Its subagents' transcripts, each file once, within what the conversation and the session may read. One
		// that cannot be read is left out, as agents/text leaves it.
		for _, f := range s.subs {
			if cut != "" || w.cut != "" {
				break
			}
			switch {
			case read+f.st.size > allowRead:
				cut = readCut(true)
			case read+f.st.size > MaxFile:
				cut = readCut(false)
			default:
				read += f.st.size
				if err := w.entries(sess, s, f.rel, f.id, f.st.size, func(text.Entry) bool { return true }); err != nil && !errors.As(err, new(readError)) {
					return err
				}
			}
		}
		if err := w.finish(); err != nil {
			return err
		}
	}
	if w.cut != "" {
		cut = w.cut
	}
	if err := save(tx, id, st, s.sig, end, tail, w.next, w.cost, read, cut); err != nil {
		return err
	}
	return account(tx, session, old, w.cost, read)
}

// appendEntries indexes the entries of s's main file in [old.done, end): what was appended since. A conversation
// cut before is not read again.
func appendEntries(tx *sql.Tx, sess *layout.Dir, s *source, old *row, st fstat, end int64, tail []byte, allowCost, allowRead int64, why string) error {
	next, cost, read, cut := old.next, old.cost, old.read, old.cut
	grown := read + st.size - old.fstat.size // the transcript is read again whole
	switch {
	case end <= old.done:
		end, tail = old.done, old.tail
	case cut != "":
	case grown > allowRead:
		cut = readCut(true)
	default:
		read = grown
		w, err := newWriter(tx, old.id, old.next, old.cost, allowCost, why)
		if err != nil {
			return err
		}
		defer w.close()
		if err := w.entries(sess, s, s.rel, "", st.size, func(e text.Entry) bool {
			return e.Offset >= old.done && e.Offset < end
		}); err != nil {
			return err
		}
		if err := w.finish(); err != nil {
			return err
		}
		next, cost, cut = w.next, w.cost, w.cut
	}
	if err := save(tx, old.id, st, s.sig, end, tail, next, cost, read, cut); err != nil {
		return err
	}
	return account(tx, old.session, old, cost, read)
}

// reuse readies the row of s: old's, emptied of its entries, or a new one.
func reuse(tx *sql.Tx, session string, s *source, old *row) (int64, error) {
	if old != nil {
		return old.id, empty(tx, old.id)
	}
	res, err := tx.Exec(`INSERT INTO conv(session, agent, src, conv, size, ctime, ino, sig, done, next)
		VALUES(?, ?, ?, ?, 0, 0, 0, '', 0, 0)`, session, s.agent.Name, s.src, convID(s))
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

func convID(s *source) string {
	if s.record {
		return ""
	}
	return s.conv.ID
}

func save(tx *sql.Tx, id int64, st fstat, sig string, done int64, tail []byte, next, cost, read int64, cut string) error {
	_, err := tx.Exec(`UPDATE conv SET size = ?, ctime = ?, ino = ?, sig = ?, done = ?, tail = ?, next = ?, cost = ?,
		read = ?, cut = ? WHERE id = ?`, st.size, st.ctime, st.ino, sig, done, tail, next, cost, read, cut, id)
	return err
}

// fileStat is f's fstat.
func fileStat(f *os.File) (fstat, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fstat{}, err
	}
	return statOf(&st), nil
}

// sameTail reports whether f still holds old's tail just before old.done: an append left it as it was.
func sameTail(f *os.File, old *row) bool {
	if old.done < int64(len(old.tail)) {
		return false
	}
	b := make([]byte, len(old.tail))
	if _, err := f.ReadAt(b, old.done-int64(len(b))); err != nil && !(errors.Is(err, io.EOF) && len(b) == 0) {
		return false
	}
	return bytes.Equal(b, old.tail)
}

// lastLineEnd is the offset just past the last newline in f's bytes [from, size) (from: none): entries of lines
// past it (one being written) wait for the next update.
func lastLineEnd(f *os.File, from, size int64) (int64, error) {
	const chunk = 64 << 10
	buf := make([]byte, chunk)
	for end := size; end > from; {
		start := max(end-chunk, from)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return from, nil
}
