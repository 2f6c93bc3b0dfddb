package search

import (
	"database/sql"
	"errors"
	"fmt"
	"path"

	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/agents/text"
	"github.com/sessionfs/sessionfs/layout"
)

// The index's budget. A session's files are written by an untrusted agent and the index lies outside every session
// (<store>/index/), so what a session makes the index hold and read is bounded by what it wrote, and capped:
//
//   - Cost. A conversation's rows cost its session the bytes of their text plus rowCost each, and each cwd, tool
//     and subagent name they hold costs its bytes plus rowCost once per conversation (table str: an entry holds
//     its number, never the string). The database holds at most indexPerCost times the cost of what it indexed,
//     plus indexFixed (TestIndexSizeWithinItsCost measures it on hostile and on ordinary conversations).
//   - Rows. A line's first perLine entries are a row each (a hit each, as an agent wrote them); past those, the
//     line's entries of one kind are merged into rows of up to mergeText bytes: a line of 20,000 one-word parts is
//     a few rows, not 20,000.
//   - Caps. A session's rows cost at most maxSessionCost, the whole store's at most maxStoreCost. A session's files
//     are read maxSessionRead bytes at most in all, a conversation's (its transcript and its subagents') MaxFile,
//     each inode once (listing.dedupe: a hard link of a file read is not read again). Past a cap a conversation's
//     indexing stops where it is and the conversation is marked cut, saying why: search names the sessions
//     indexed in part (Partial). The cut is not tried again until the conversation is rewritten.
//
// Variables for tests.
var (
	maxSessionCost int64 = 128 << 20
	maxStoreCost   int64 = 8 << 30
	maxSessionRead int64 = 2 << 30
)

const (
	rowCost   = 64
	perLine   = 16
	mergeText = 4 << 10
	// The stated bound: the database holds at most indexPerCost times what its rows cost, plus indexFixed.
	indexPerCost = 3
	indexFixed   = 1 << 20
)

// errCut stops a reading whose conversation's budget is spent; errStop one that reached the file's size as listed.
var (
	errCut  = errors.New("the index's budget is spent")
	errStop = errors.New("past the file's listed size")
)

// noSubagents is the conversation id a Claude transcript is read under to read that file alone: agents/text reads
// the subagents of a conversation from the folder named by its id beside it, and no name holds a NUL. The index
// reads each subagent's transcript itself, as its own file, so that a hard link of one read already is not read
// again and each counts towards the conversation's and the session's budget (TestReadsOneFileAtATime).
const noSubagents = "\x00"

// allowance is what the conversation old (nil: a new one) of session may cost and read in all, given what its
// session's other conversations and the store hold; why says which cap bounds the cost.
func allowance(tx *sql.Tx, session string, old *row) (cost, read int64, why string, err error) {
	var sCost, sRead, store int64
	err = tx.QueryRow(`SELECT cost, read FROM sess WHERE session = ?`, session).Scan(&sCost, &sRead)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, 0, "", err
	}
	if err = tx.QueryRow(`SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'cost'`).Scan(&store); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, 0, "", err
	}
	if old != nil {
		sCost, sRead, store = sCost-old.cost, sRead-old.read, store-old.cost
	}
	cost, why = maxSessionCost-sCost, fmt.Sprintf("its session's index budget (%s) is spent", bytesOf(maxSessionCost))
	if left := maxStoreCost - store; left < cost {
		cost, why = left, fmt.Sprintf("the store's index is full (%s)", bytesOf(maxStoreCost))
	}
	return max(cost, 0), max(maxSessionRead-sRead, 0), why, nil
}

// readCut is the note of a conversation whose files are not all read.
func readCut(total bool) string {
	if total {
		return fmt.Sprintf("its session's files past %s in all are not read", bytesOf(maxSessionRead))
	}
	return fmt.Sprintf("its files past %s in all are not read", bytesOf(MaxFile))
}

// account adds what conversation old (nil: new) now costs and reads, cost and read, to its session's and the
// store's sums, in the transaction that changed it.
func account(tx *sql.Tx, session string, old *row, cost, read int64) error {
	if old != nil {
		cost, read = cost-old.cost, read-old.read
	}
	if cost == 0 && read == 0 {
		return nil
	}
	// A session's row is made by the first conversation indexed when another process's reset came between its
	// plan and now: its hash "" says it is to be indexed again.
	if _, err := tx.Exec(`INSERT INTO sess(session, sig, cost, read) VALUES(?, '', ?, ?)
		ON CONFLICT(session) DO UPDATE SET cost = cost + excluded.cost, read = read + excluded.read`, session, cost, read); err != nil {
		return err
	}
	_, err := tx.Exec(`UPDATE meta SET value = CAST(CAST(value AS INTEGER) + ? AS TEXT) WHERE key = 'cost'`, cost)
	return err
}

// writer adds one conversation's entries to the index as rows, merging a line's entries past its first perLine,
// within the conversation's budget.
type writer struct {
	tx    *sql.Tx
	stmt  *sql.Stmt
	id    int64            // the conversation's
	next  int64            // the number of its next entry
	strs  map[string]int64 // its strings, by value
	nstr  int64
	cost  int64 // what its rows cost so far
	allow int64 // the most they may cost
	why   string
	cut   string // why it stopped, once it did

	pend    pending
	has     bool
	line    lineKey // of the last entry
	perLine int     // entries of that line so far
}

// lineKey is a line of a conversation: its file (by subagent) and offset.
type lineKey struct {
	sub string
	off int64
}

// pending is the row being made: the entry it began with, its text so far.
type pending struct {
	e      text.Entry
	text   []byte
	merged bool // past its line's first perLine: later entries of the line may join it
}

// newWriter readies a writer of conversation id, whose next entry is number next and whose rows cost cost so far
// (an append: its strings are read back).
func newWriter(tx *sql.Tx, id, next, cost, allow int64, why string) (*writer, error) {
	stmt, err := tx.Prepare(`INSERT INTO entry(rowid, text, at, cwd, kind, off, tool, sub) VALUES(?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return nil, err
	}
	w := &writer{tx: tx, stmt: stmt, id: id, next: next, strs: map[string]int64{}, cost: cost, allow: allow, why: why}
	if cost > 0 {
		rs, err := tx.Query(`SELECT n, s FROM str WHERE conv = ?`, id)
		if err != nil {
			stmt.Close()
			return nil, err
		}
		defer rs.Close()
		for rs.Next() {
			var n int64
			var s string
			if err := rs.Scan(&n, &s); err != nil {
				stmt.Close()
				return nil, err
			}
			w.strs[s], w.nstr = n, max(w.nstr, n)
		}
		if err := rs.Err(); err != nil {
			stmt.Close()
			return nil, err
		}
	}
	return w, nil
}

func (w *writer) close() { w.stmt.Close() }

// entries reads the entries of one file of conversation s to w, those keep takes: rel is s's own file or, sub
// being its id, a subagent's (read alone, each an inode of its own). size >= 0 stops the reading at a line that
// starts past it: the file grew since it was listed, and what it grew by is the next catch-up's. A file that
// cannot be read is a readError; the index's own failure (a row not written) is returned as it is.
func (w *writer) entries(sess *layout.Dir, s *source, rel, sub string, size int64, keep func(text.Entry) bool) error {
	c := s.conv
	if s.agent == claude.Agent {
		c.ID, c.Path = noSubagents, path.Join(sess.Name(), rel)
	}
	var dbErr error
	err := text.Entries(sess, s.agent, c, func(e text.Entry) error {
		if sub != "" {
			e.Subagent = sub
		}
		if size >= 0 && e.Offset >= size {
			return errStop
		}
		if !keep(e) {
			return nil
		}
		err := w.add(e)
		if err != nil && !errors.Is(err, errCut) {
			dbErr = err
		}
		return err // errCut: the budget is spent, the reading stops
	})
	switch {
	case dbErr != nil:
		return dbErr
	case err == nil || errors.Is(err, errStop) || errors.Is(err, errCut):
		return nil
	}
	return readError{fmt.Errorf("%s: %w", c.Path, err)}
}

// add adds entry e: a row of its own, or, past its line's first perLine entries, merged into the row before it when
// that one is of the same kind and stays within mergeText.
func (w *writer) add(e text.Entry) error {
	if e.Text == "" {
		return nil
	}
	if w.cut != "" {
		return errCut
	}
	k := lineKey{e.Subagent, e.Offset}
	if w.has && w.pend.merged && k == w.line && w.pend.e.Kind == e.Kind && len(w.pend.text)+1+len(e.Text) <= mergeText {
		w.pend.text = append(append(w.pend.text, '\n'), e.Text...)
		if w.pend.e.Tool != e.Tool {
			w.pend.e.Tool = "" // calls of several tools: each call's text names its tool
		}
		return nil
	}
	if err := w.flush(); err != nil {
		return err
	}
	if k != w.line {
		w.line, w.perLine = k, 0
	}
	w.perLine++
	w.pend = pending{e: e, text: append(w.pend.text[:0], e.Text...), merged: w.perLine > perLine}
	w.has = true
	return nil
}

// flush writes the pending row, if its cost fits.
func (w *writer) flush() error {
	if !w.has {
		return nil
	}
	w.has = false
	if w.next >= 1<<convShift {
		return nil
	}
	e := w.pend.e
	var ids [3]int64
	for i, s := range []string{e.Cwd, e.Tool, e.Subagent} {
		var err error
		if ids[i], err = w.str(s); err != nil {
			return err
		}
	}
	if !w.spend(int64(len(w.pend.text)) + rowCost) {
		return errCut
	}
	at := int64(0)
	if !e.Time.IsZero() {
		at = e.Time.UnixMilli()
	}
	if _, err := w.stmt.Exec(w.id<<convShift+w.next, string(w.pend.text), at, ids[0], int(e.Kind), e.Offset, ids[1], ids[2]); err != nil {
		return err
	}
	w.next++
	inserted.Add(1)
	return nil
}

// finish writes the last pending row; a cut is no error.
func (w *writer) finish() error {
	if err := w.flush(); err != nil && !errors.Is(err, errCut) {
		return err
	}
	return nil
}

// str is the number of string s in the conversation's table (0 for ""), adding it.
func (w *writer) str(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	if n, ok := w.strs[s]; ok {
		return n, nil
	}
	if !w.spend(int64(len(s)) + rowCost) {
		return 0, errCut
	}
	w.nstr++
	if _, err := w.tx.Exec(`INSERT INTO str(conv, n, s) VALUES(?, ?, ?)`, w.id, w.nstr, s); err != nil {
		return 0, err
	}
	w.strs[s] = w.nstr
	return w.nstr, nil
}

// spend takes n from the budget, or marks the conversation cut.
func (w *writer) spend(n int64) bool {
	if w.cost+n > w.allow {
		w.cut = w.why
		return false
	}
	w.cost += n
	return true
}

// bytesOf is n bytes for a message: 128 MiB, 2 GiB.
func bytesOf(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
