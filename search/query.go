package search

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/sessionfs/sessionfs/agents/text"
)

// Query is what to search for and where.
type Query struct {
	Match    string    // FTS5's syntax: words, "a phrase", prefix*, AND, OR, NOT, NEAR(...)
	Sessions []string  // only these sessions (nil: all; empty but not nil: none)
	Agent    string    // only this agent's conversations ("": all)
	Since    time.Time // only entries of this time or later (zero: any time)
	Limit    int       // at most this many hits (<= 0: 20)
}

// Hit is one entry that matched, best first.
type Hit struct {
	Session      string    `json:"session"`
	Agent        string    `json:"agent"`
	Conversation string    `json:"conversation"`
	Time         time.Time `json:"time,omitzero"`
	Cwd          string    `json:"cwd,omitempty"`
	Kind         string    `json:"kind"`
	Tool         string    `json:"tool,omitempty"`
	Subagent     string    `json:"subagent,omitempty"`
	Offset       int64     `json:"offset"`
	// Snippet is the text around the match; Marks are the matched spans in it, [start, end) byte offsets.
	Snippet string   `json:"snippet"`
	Marks   [][2]int `json:"marks,omitempty"`
	Score   float64  `json:"score"` // bm25's: lower is better
}

// ErrQuery is a query FTS5 cannot read.
var ErrQuery = errors.New("search: not a query SQLite FTS5 can read")

// Snippet() marks the match with these; agents/text shows every control character of a session's text as \xNN,
// so they never occur in it.
const markOpen, markClose = "\x02", "\x03"

// RankLimit is how many entries a query may match and still be ranked: bm25 counts every match of each term
// first, seconds for a word said everywhere. A query that matches more lists the entries indexed last first.
const RankLimit = 5000

// Results are a search's hits, and whether they are ranked (by bm25, best first) or the entries indexed last
// first (a query that matches more than RankLimit entries).
type Results struct {
	Hits   []Hit `json:"hits"`
	Ranked bool  `json:"ranked"`
}

// Search returns the entries that match q.
func (ix *Index) Search(q Query) (Results, error) {
	var res Results
	err := ix.read(func(tx *sql.Tx) error {
		res = Results{}
		broad, err := broad(tx, q.Match)
		if err != nil {
			return err
		}
		res.Ranked = !broad
		order, score := `ORDER BY e.rank`, `e.rank`
		if broad {
			order, score = `ORDER BY e.rowid DESC`, `0.0`
		}
		sqlText, args, err := q.sql(`c.session, c.agent, c.conv, e.at, coalesce(sc.s, ''), e.kind, coalesce(st.s, ''),
			coalesce(ss.s, ''), e.off, snippet(entry, 0, '`+markOpen+`', '`+markClose+`', '…', 16), `+score, strJoins, order)
		if err != nil {
			return err
		}
		rs, err := tx.Query(sqlText, args...)
		if err != nil {
			return queryError(q.Match, err)
		}
		defer rs.Close()
		for rs.Next() {
			var h Hit
			var at int64
			var kind int
			var snippet string
			if err := rs.Scan(&h.Session, &h.Agent, &h.Conversation, &at, &h.Cwd, &kind, &h.Tool, &h.Subagent,
				&h.Offset, &snippet, &h.Score); err != nil {
				return err
			}
			h.Kind = text.Kind(kind).String()
			if at != 0 {
				h.Time = time.UnixMilli(at)
			}
			h.Snippet, h.Marks = unmark(snippet)
			res.Hits = append(res.Hits, h)
		}
		return queryError(q.Match, rs.Err())
	})
	return res, err
}

// broad reports whether match matches more than RankLimit entries: FTS5 reads its matches last first, lazily, so
// this costs RankLimit steps at most.
func broad(tx *sql.Tx, match string) (bool, error) {
	norm := Normalize(match)
	if norm == "" {
		return false, fmt.Errorf("%w: the query is empty", ErrQuery)
	}
	var rowid int64
	err := tx.QueryRow(`SELECT rowid FROM entry WHERE entry MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?`,
		norm, RankLimit).Scan(&rowid)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, queryError(match, err)
	}
	return true, nil
}

// SessionIDs returns the sessions with an entry that matches q, the best match's first (for a query that matches
// more than RankLimit entries: the session of the entry indexed last first); q.Limit <= 0: all.
func (ix *Index) SessionIDs(q Query) ([]string, error) {
	var ids []string
	err := ix.read(func(tx *sql.Tx) error {
		ids = nil
		limit := q.Limit
		q.Limit = -1
		broad, err := broad(tx, q.Match)
		if err != nil {
			return err
		}
		cols, tail := `c.session, min(e.rank) AS best`, `GROUP BY c.session ORDER BY best`
		if broad {
			cols, tail = `c.session, -max(e.rowid) AS best`, `GROUP BY c.session ORDER BY best`
		}
		sqlText, args, err := q.sql(cols, "", tail)
		if err != nil {
			return err
		}
		if limit > 0 {
			sqlText += fmt.Sprintf(` LIMIT %d`, limit)
		}
		rs, err := tx.Query(sqlText, args...)
		if err != nil {
			return queryError(q.Match, err)
		}
		defer rs.Close()
		for rs.Next() {
			var id string
			var best float64
			if err := rs.Scan(&id, &best); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return queryError(q.Match, rs.Err())
	})
	return ids, err
}

// errRebuilt: the index was emptied since this process caught it up (another process's --reindex, filling it
// again).
var errRebuilt = errors.New("search: the index was rebuilt since it was caught up")

// maxCatchUps bounds the catch-ups a query makes of an index other processes keep emptying.
const maxCatchUps = 3

// read runs fn on one snapshot of the index, so its queries agree. When this process caught the index up and
// another has emptied it since (its --reindex, still filling it again), the snapshot is short of what this
// process's catch-up indexed: it catches up again first, helping fill it.
func (ix *Index) read(fn func(tx *sql.Tx) error) error {
	for tries := 0; ; tries++ {
		err := ix.retry(func() error { return ix.snapshot(fn) })
		if !errors.Is(err, errRebuilt) {
			return err
		}
		if tries == maxCatchUps {
			ix.warn(fmt.Sprintf("another process's --reindex emptied the index after each of this search's %d catch-ups: what it answers may be short", tries))
			ix.gen = ""
			continue
		}
		if !ix.CatchUpOrWarn(ix.progress) {
			ix.gen = ""
		}
	}
}

// snapshot runs fn in a read transaction: errRebuilt when the index is of another generation than this process
// caught up (none: any).
func (ix *Index) snapshot(fn func(tx *sql.Tx) error) error {
	tx, err := ix.db.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true}) // deferred: takes no write lock
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if ix.gen != "" {
		var gen string
		if err := tx.QueryRow(`SELECT value FROM meta WHERE key = 'gen'`).Scan(&gen); err != nil {
			return err
		}
		if gen != ix.gen {
			return errRebuilt
		}
	}
	return fn(tx)
}

// strJoins are the strings an entry names by number: its cwd, tool and subagent.
const strJoins = ` LEFT JOIN str sc ON sc.conv = c.id AND sc.n = e.cwd LEFT JOIN str st ON st.conv = c.id AND st.n = e.tool
	LEFT JOIN str ss ON ss.conv = c.id AND ss.n = e.sub`

// Partial is a session indexed in part: how many of its conversations were cut, and why the first was.
type Partial struct {
	Session       string `json:"session"`
	Conversations int    `json:"conversations"`
	Why           string `json:"why"`
}

// Partial returns the sessions (of sessions; nil: all) with a conversation indexed in part, by id.
func (ix *Index) Partial(sessions []string) ([]Partial, error) {
	var out []Partial
	err := ix.read(func(tx *sql.Tx) error {
		out = nil
		sqlText, args := `SELECT session, count(*), min(cut) FROM conv WHERE cut != ''`, []any{}
		if sessions != nil {
			list, _ := json.Marshal(sessions)
			sqlText += ` AND session IN (SELECT value FROM json_each(?))`
			args = append(args, string(list))
		}
		rs, err := tx.Query(sqlText+` GROUP BY session ORDER BY session`, args...)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var p Partial
			if err := rs.Scan(&p.Session, &p.Conversations, &p.Why); err != nil {
				return err
			}
			out = append(out, p)
		}
		return rs.Err()
	})
	return out, err
}

// sql is the statement that selects cols of q's matches (joins: of the tables joined besides conv), then tail;
// every value is a bound parameter.
func (q Query) sql(cols, joins, tail string) (string, []any, error) {
	match := Normalize(q.Match)
	if match == "" {
		return "", nil, fmt.Errorf("%w: the query is empty", ErrQuery)
	}
	var b strings.Builder
	args := []any{match}
	fmt.Fprintf(&b, `SELECT %s FROM entry e JOIN conv c ON c.id = (e.rowid >> %d)%s WHERE entry MATCH ?`, cols, convShift, joins)
	if q.Sessions != nil {
		list, _ := json.Marshal(q.Sessions)
		b.WriteString(` AND c.session IN (SELECT value FROM json_each(?))`)
		args = append(args, string(list))
	}
	if q.Agent != "" {
		b.WriteString(` AND c.agent = ?`)
		args = append(args, q.Agent)
	}
	if !q.Since.IsZero() {
		b.WriteString(` AND e.at >= ?`)
		args = append(args, q.Since.UnixMilli())
	}
	b.WriteString(" " + tail)
	if q.Limit >= 0 {
		limit := q.Limit
		if limit == 0 {
			limit = 20
		}
		b.WriteString(` LIMIT ?`)
		args = append(args, limit)
	}
	return b.String(), args, nil
}

// queryError says a query FTS5 rejected is the query's fault (SQLite's generic error, raised by FTS5's parser for
// a syntax error, an unknown column or an unterminated string).
func queryError(match string, err error) error {
	var se *sqlite.Error
	if err != nil && errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_ERROR {
		msg := strings.TrimPrefix(se.Error(), "SQL logic error: ")
		if i := strings.LastIndex(msg, " ("); i > 0 && strings.HasSuffix(msg, ")") {
			msg = msg[:i] // SQLite's code, "(1)"
		}
		return fmt.Errorf("%w: %q: %s (put words with other characters in double quotes: \"fix-login\"; prefix*, AND, OR, NOT, NEAR(a b))",
			ErrQuery, match, msg)
	}
	return err
}

// unmark takes snippet()'s marks out of s, returning the spans they marked.
func unmark(s string) (string, [][2]int) {
	var b strings.Builder
	var marks [][2]int
	start := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case markOpen[0]:
			start = b.Len()
		case markClose[0]:
			if start >= 0 {
				marks = append(marks, [2]int{start, b.Len()})
				start = -1
			}
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), marks
}

// Normalize makes a query of the words a user types one FTS5 reads: a word with characters FTS5's bare words do
// not take (fix-login, a.b, don't, C++) is quoted as a phrase, keeping a trailing * (a prefix); quoted phrases,
// AND, OR, NOT, NEAR(...), parentheses, ^ and * stay as FTS5 reads them. What it still cannot read (an
// unterminated quote) is FTS5's to reject.
func Normalize(q string) string {
	var out []string
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '"':
			j := i + 1
			for j < len(q) {
				if q[j] == '"' {
					if j+1 < len(q) && q[j+1] == '"' {
						j += 2
						continue
					}
					break
				}
				j++
			}
			if j >= len(q) {
				out = append(out, q[i:]) // unterminated: FTS5 says so
				i = len(q)
				continue
			}
			j++
			if j < len(q) && q[j] == '*' {
				j++
			}
			out = append(out, q[i:j])
			i = j
		case c == '(' || c == ')' || c == '+' || c == '^':
			out = append(out, string(c))
			i++
		default:
			j := i
			for j < len(q) && !strings.ContainsRune(" \t\n\r\"()", rune(q[j])) {
				j++
			}
			out = append(out, word(q[i:j]))
			i = j
		}
	}
	return strings.Join(out, " ")
}

// word is one unquoted word as FTS5 reads it.
func word(w string) string {
	switch w {
	case "AND", "OR", "NOT", "NEAR":
		return w
	}
	prefix := strings.HasSuffix(w, "*") && len(w) > 1
	core := strings.TrimSuffix(w, "*")
	bare := core != ""
	for _, r := range core {
		if !(r == '_' || r >= 0x80 || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			bare = false
			break
		}
	}
	if bare {
		return w
	}
	quoted := `"` + strings.ReplaceAll(core, `"`, `""`) + `"`
	if prefix {
		quoted += "*"
	}
	return quoted
}
