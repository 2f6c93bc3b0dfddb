package opencode

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// The schema check of an untrusted database (untrusted.go): every object of sqlite_master read whole, each row's
// SQL read as SQLite will parse it, a plain table or index of the shape the caller reads, or a refusal.

// object is one row of sqlite_master.
type object struct {
	typ, name, table string
	sql              sql.NullString
}

// vetted is what vet read of a database's schema.
type vetted struct {
	objects []object            // sqlite_master's rows, in order
	tables  map[string][]string // each table (not SQLite's own) with its columns, by their names in lower case
}

// vet reads the whole sqlite_master of the database attached as name (main: the one opened) and refuses it
// unless every object is a plain table or an index of one (or, when triggers, a trigger), the tables in want
// there with (at least) their columns.
func (d *db) vet(name string, want map[string][]string, triggers bool) (vetted, error) {
	var objs []object
	err := d.each(`SELECT type, name, tbl_name, sql FROM `+quote(name)+`.sqlite_master`, nil, func(rows *sql.Rows) error {
		if len(objs) == maxObjects {
			return fmt.Errorf("%w: more than %d objects in its schema", errRefused, maxObjects)
		}
		var o object
		var typ, name, table sql.NullString
		if err := rows.Scan(&typ, &name, &table, &o.sql); err != nil {
			return err
		}
		o.typ, o.name, o.table = typ.String, name.String, table.String
		objs = append(objs, o)
		return nil
	})
	if err != nil {
		return vetted{}, err
	}
	tables := map[string][]string{}
	var indexes []string
	for _, o := range objs {
		if triggers && o.typ == "trigger" {
			continue // a read-only handle's (access.triggers): never fired, and denied if compiled
		}
		if err := plain(o); err != nil {
			return vetted{}, fmt.Errorf("%w: %v", errRefused, err)
		}
		switch {
		case o.typ == "index":
			indexes = append(indexes, o.name)
		case !ours(o.name):
			tables[lower(o.name)] = nil
		}
	}
	for t := range tables {
		var cols []string
		err := d.each(`SELECT name, hidden FROM pragma_table_xinfo(?, ?)`, []any{t, name}, func(rows *sql.Rows) error {
			var name string
			var hidden int
			if err := rows.Scan(&name, &hidden); err != nil {
				return err
			}
			if hidden != 0 {
				return fmt.Errorf("%w: table %s has a generated or hidden column (%s)", errRefused, t, name)
			}
			cols = append(cols, lower(name))
			return nil
		})
		if err != nil {
			return vetted{}, err
		}
		if len(cols) == 0 {
			return vetted{}, fmt.Errorf("%w: table %s has no columns", errRefused, t)
		}
		tables[t] = cols
	}
	for _, ix := range indexes {
		err := d.each(`SELECT cid FROM pragma_index_xinfo(?, ?) WHERE key`, []any{ix, name}, func(rows *sql.Rows) error {
			var cid int
			if err := rows.Scan(&cid); err != nil {
				return err
			}
			if cid < 0 {
				return fmt.Errorf("%w: index %s is on an expression", errRefused, ix)
			}
			return nil
		})
		if err != nil {
			return vetted{}, err
		}
	}
	for t, cols := range want {
		have, ok := tables[t]
		if !ok {
			return vetted{}, missing(t, tables)
		}
		for _, c := range cols {
			if !slices.Contains(have, c) {
				return vetted{}, fmt.Errorf("%w: table %s has no column %s", errRefused, t, c)
			}
		}
	}
	return vetted{objects: objs, tables: tables}, nil
}

// missing is the refusal of a database without table t. OpenCode 2 keeps its conversations in tables of
// another shape (session_v2, session_message): its database says what it is, rather than reading as a session
// with no conversations.
func missing(t string, tables map[string][]string) error {
	if _, v2 := tables["session_v2"]; v2 {
		return fmt.Errorf("%w: an OpenCode 2 database (table session_v2, no table %s): sessionfs reads the "+
			"conversations of opencode 1.x (npm opencode-ai, 1.18.33 tested), not yet OpenCode 2's", errRefused, t)
	}
	return fmt.Errorf("%w: no table %s", errRefused, t)
}

// ours reports whether name is one SQLite keeps for itself (which a session may plant with writable_schema).
func ours(name string) bool { return strings.HasPrefix(lower(name), "sqlite_") }

// sqliteTables are the tables SQLite makes itself, by the name it gives them.
var sqliteTables = []string{"sqlite_sequence", "sqlite_stat1", "sqlite_stat4"}

// plain checks one object of a schema: a table or an index whose SQL is what SQLite itself writes for one
// (SQLite parses an object by its SQL alone, whatever its type says), of the object's own name; SQLite's own
// names only for its own few tables and the indexes of constraints (which have no SQL).
func plain(o object) error {
	what := fmt.Sprintf("%s %q", o.typ, o.name)
	if !o.sql.Valid || o.sql.String == "" {
		if o.typ == "index" && strings.HasPrefix(lower(o.name), "sqlite_autoindex_") {
			return nil
		}
		return fmt.Errorf("%s has no SQL", what)
	}
	kind, name, on := createOf(o.sql.String)
	switch {
	case o.typ != "table" && o.typ != "index":
		return fmt.Errorf("%s: only tables and indexes are read, never a %s", what, o.typ)
	case kind != o.typ:
		return fmt.Errorf("%s is not a plain %s: %.60q", what, o.typ, o.sql.String)
	case !strings.EqualFold(name, o.name):
		return fmt.Errorf("%s is made as %q", what, name)
	case kind == "index" && !strings.EqualFold(on, o.table):
		return fmt.Errorf("%s is on %q, not %q", what, on, o.table)
	case kind == "table" && !strings.EqualFold(o.table, o.name):
		return fmt.Errorf("%s is recorded as %q", what, o.table)
	case ours(o.name) && (kind != "table" || !slices.Contains(sqliteTables, lower(o.name))):
		return fmt.Errorf("%s has a name of SQLite's own", what)
	}
	return nil
}

// createOf reads the statement SQLite keeps for a table or an index: "CREATE TABLE name (" gives ("table",
// name); "CREATE [UNIQUE] INDEX name ON table" gives ("index", name, table). Anything else (a view, a trigger,
// a virtual table, a table made AS SELECT, a name with its schema) gives "".
func createOf(text string) (kind, name, on string) {
	toks, _ := tokens(text, 8)
	word := func(i int, w string) bool {
		return i < len(toks) && !toks[i].quoted && strings.EqualFold(toks[i].text, w)
	}
	ident := func(i int) bool {
		return i < len(toks) && (toks[i].quoted || isWord(toks[i].text)) && !strings.HasPrefix(toks[i].text, "'")
	}
	if !word(0, "create") {
		return "", "", ""
	}
	switch {
	case word(1, "table") && ident(2) && bare(toks, 3) == "(":
		return "table", toks[2].text, ""
	case word(1, "index") && ident(2) && word(3, "on") && ident(4) && bare(toks, 5) == "(":
		return "index", toks[2].text, toks[4].text
	case word(1, "unique") && word(2, "index") && ident(3) && word(4, "on") && ident(5) && bare(toks, 6) == "(":
		return "index", toks[3].text, toks[5].text
	}
	return "", "", ""
}

// bare is the text of token n if it is not quoted.
func bare(toks []sqlToken, n int) string {
	if n < len(toks) && !toks[n].quoted {
		return toks[n].text
	}
	return ""
}

// sqlToken is a word, a quoted name (its text unquoted), a string (its text as written) or one character.
type sqlToken struct {
	text   string
	quoted bool
}

// oneStatement reports whether text is one SQL statement, a ";" at most after it: what SQLite's schema holds
// (SQLite parses only the first statement of an object's SQL; one who runs the text would run them all).
func oneStatement(text string) bool {
	toks, whole := tokens(text, -1)
	for i, t := range toks {
		if !t.quoted && t.text == ";" && i != len(toks)-1 {
			return false
		}
	}
	return whole && len(toks) > 0
}

// tokens splits the start of an SQL statement into at most n tokens (n < 0: all), as SQLite's tokenizer would:
// comments and spaces skipped, names quoted "so", `so` or [so]. whole: the text was read to its end, no quote or
// comment left open.
func tokens(s string, n int) (out []sqlToken, whole bool) {
	for len(s) > 0 && (n < 0 || len(out) < n) {
		switch c := s[0]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			s = s[1:]
		case strings.HasPrefix(s, "--"):
			end := strings.IndexByte(s, '\n')
			if end < 0 {
				return out, true
			}
			s = s[end+1:]
		case strings.HasPrefix(s, "/*"):
			end := strings.Index(s[2:], "*/")
			if end < 0 {
				return out, true // SQLite ends a comment at the end of the text
			}
			s = s[2+end+2:]
		case c == '"' || c == '`' || c == '[' || c == '\'':
			closing := c
			if c == '[' {
				closing = ']'
			}
			var b strings.Builder
			j := 1
			for ; j < len(s); j++ {
				if s[j] == closing {
					if closing != ']' && j+1 < len(s) && s[j+1] == closing {
						b.WriteByte(closing)
						j++
						continue
					}
					break
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return out, false // unterminated
			}
			if c == '\'' {
				out = append(out, sqlToken{text: s[:j+1]}) // a string, never a name
			} else {
				out = append(out, sqlToken{text: b.String(), quoted: true})
			}
			s = s[j+1:]
		case isWordByte(c):
			j := 0
			for j < len(s) && (isWordByte(s[j]) || s[j] >= '0' && s[j] <= '9' || s[j] == '$') {
				j++
			}
			out = append(out, sqlToken{text: s[:j]})
			s = s[j:]
		default:
			out = append(out, sqlToken{text: s[:1]})
			s = s[1:]
		}
	}
	return out, len(s) == 0
}

// lower folds the ASCII letters of name, as SQLite compares names.
func lower(name string) string {
	b := []byte(name)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// isWordByte: a byte that starts a name (non-ASCII bytes too, as SQLite reads them).
func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// isWord reports whether s is a bare name.
func isWord(s string) bool { return s != "" && isWordByte(s[0]) }
