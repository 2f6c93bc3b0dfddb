package opencode

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// watchTail is how watch follows opencode: its messages are rows of its database, read from a private copy
// whenever the database or its log changes.
var watchTail = &agents.Tail{Files: []string{DB, DB + "-wal"}, Start: startTail}

// slack is how far before the newest change seen a read looks again: opencode stamps a row before it writes it,
// so two of its writers (a subagent's, the main conversation's) may land out of order.
const slack = 60_000 // ms

// tail follows the messages of one session's database. A message is printed once, when complete: a reply once
// opencode marks it completed (or failed), its text and tool calls then final; a prompt once its text is in.
type tail struct {
	fromStart, json bool
	started         bool
	mark            int64           // the newest time_updated of a message or part seen
	printed         map[string]bool // messages printed, or complete when watch began
}

func startTail(fromStart, asJSON bool) func(*layout.Dir) ([]string, error) {
	t := &tail{fromStart: fromStart, json: asJSON, printed: map[string]bool{}}
	return t.next
}

// tailShape is what watch reads of the database.
var tailShape = map[string][]string{
	"session": {"id", "parent_id"},
	"message": {"id", "session_id", "time_created", "time_updated", "data"},
	"part":    {"id", "message_id", "time_updated", "data"},
}

func (t *tail) next(sess *layout.Dir) ([]string, error) {
	d, done, err := open(sess, access{within: time.Minute, tables: tailShape})
	if errors.Is(err, fs.ErrNotExist) {
		t.started = true // none yet: all a database made later holds is new
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer done()
	quiet := !t.started && !t.fromStart
	lines, err := t.read(d, quiet)
	if err == nil {
		t.started = true
	}
	return lines, err
}

// message is one row of the message table.
type message struct {
	id, session string
	created     int64
	data        string
}

// info is what watch reads of a message's data.
type info struct {
	Role string `json:"role"`
	Time struct {
		Completed int64 `json:"completed"`
	} `json:"time"`
	Error *struct {
		Name string `json:"name"`
		Data struct {
			Message string `json:"message"`
		} `json:"data"`
	} `json:"error"`
}

// read returns the lines of the messages completed since the last read; quiet only notes those there are (watch
// begins at the end).
func (t *tail) read(d *db, quiet bool) ([]string, error) {
	parents, err := parentsOf(d)
	if err != nil {
		return nil, err
	}
	since := int64(-1 << 62)
	if t.mark != 0 {
		since = t.mark - slack
	}
	// A part's change leaves its message's row as it was: a prompt's text arrives as a part.
	var ms []message
	mark := t.mark
	err = d.each(`SELECT id, session_id, time_created, time_updated, data FROM message
		WHERE time_updated >= ?1 OR id IN (SELECT message_id FROM part WHERE time_updated >= ?1)
		ORDER BY time_created, id`, []any{since}, func(rows *sql.Rows) error {
		var m message
		var updated int64
		if rows.Scan(&m.id, &m.session, &m.created, &updated, &m.data) != nil {
			return nil
		}
		mark = max(mark, updated)
		if !t.printed[m.id] {
			ms = append(ms, m)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dbRel, err)
	}
	var newest sql.NullInt64
	if d.row(`SELECT max(time_updated) FROM part`, nil, &newest) == nil {
		mark = max(mark, newest.Int64)
	}
	t.mark = mark
	var out []string
	for _, m := range ms {
		var in info
		if json.Unmarshal([]byte(m.data), &in) != nil {
			t.printed[m.id] = true // never to be read: not printed
			continue
		}
		if quiet && (in.Role != "assistant" || done(in)) {
			t.printed[m.id] = true
			continue
		}
		ps, err := partsOf(d, m.id)
		if err != nil {
			return out, fmt.Errorf("%s: %w", dbRel, err)
		}
		if !complete(in, ps) {
			continue
		}
		t.printed[m.id] = true
		switch {
		case t.json:
			if b, err := asJSON(m, ps); err == nil {
				out = append(out, string(b))
			}
		default:
			if s := line(m, in, ps, parents); s != "" {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// done: a reply opencode finished, or gave up on.
func done(in info) bool { return in.Time.Completed > 0 || in.Error != nil }

// complete: a reply done, a prompt whose text is in, anything else as it is.
func complete(in info, ps []partRow) bool {
	switch in.Role {
	case "assistant":
		return done(in)
	case "user":
		for _, p := range ps {
			if p.Type == "text" {
				return true
			}
		}
		return false
	}
	return true
}

// partRow is one part of a message, as stored and as read.
type partRow struct {
	id, data string
	part
}

// partsOf reads message id's parts, in order.
func partsOf(d *db, id string) ([]partRow, error) {
	var out []partRow
	err := d.each(`SELECT id, data FROM part WHERE message_id = ? ORDER BY id`, []any{id}, func(rows *sql.Rows) error {
		var p partRow
		if rows.Scan(&p.id, &p.data) == nil && json.Unmarshal([]byte(p.data), &p.part) == nil {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// line renders message m as watch prints it: its conversation's short id, then the time, who speaks and what
// (a subagent's messages marked with its own short id).
func line(m message, in info, ps []partRow, parents map[string]string) string {
	var texts []string
	for _, p := range ps {
		switch {
		case p.Type == "text" && !p.Synthetic:
			texts = append(texts, p.Text)
		case p.Type == "tool":
			var st struct {
				Input json.RawMessage `json:"input"`
			}
			_ = json.Unmarshal(p.State, &st)
			texts = append(texts, agents.Call(p.Tool, st.Input))
		}
	}
	if in.Error != nil {
		texts = append(texts, "error: "+in.Error.Name+" "+in.Error.Data.Message)
	}
	texts = agents.Texts(texts)
	if len(texts) == 0 || in.Role == "" {
		return ""
	}
	who := "[" + Agent.Name + "] "
	conv := root(m.session, parents)
	if conv != m.session {
		who += "[agent-" + Short(m.session) + "] "
	}
	return Short(conv) + " " + agents.Render(ms(m.created), who+in.Role, texts)
}

// asJSON is message m as opencode's API gives it: {"info": its data with its ids, "parts": [each part's data
// with its ids]}.
func asJSON(m message, ps []partRow) ([]byte, error) {
	var msg map[string]any
	if err := json.Unmarshal([]byte(m.data), &msg); err != nil || msg == nil {
		return nil, errors.New("not an object")
	}
	msg["id"], msg["sessionID"] = m.id, m.session
	parts := []any{}
	for _, p := range ps {
		var v map[string]any
		if json.Unmarshal([]byte(p.data), &v) != nil || v == nil {
			continue
		}
		v["id"], v["messageID"], v["sessionID"] = p.id, m.id, m.session
		parts = append(parts, v)
	}
	return json.Marshal(map[string]any{"info": msg, "parts": parts})
}

// parentsOf maps each session of db to its parent (subagents' sessions to the conversation that started them).
func parentsOf(d *db) (map[string]string, error) {
	out := map[string]string{}
	err := d.each(`SELECT id, parent_id FROM session WHERE parent_id IS NOT NULL`, nil, func(rows *sql.Rows) error {
		var id, parent string
		if rows.Scan(&id, &parent) == nil {
			out[id] = parent
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dbRel, err)
	}
	return out, nil
}

// root is the top-level conversation session id belongs to (a hostile database's cycle ends somewhere).
func root(id string, parents map[string]string) string {
	for range 64 {
		p, ok := parents[id]
		if !ok {
			break
		}
		id = p
	}
	return id
}

// Short is the short id watch prints for an opencode session id: the 8 characters after "ses_" (the start of
// its time, which find and resume take without the prefix).
func Short(id string) string {
	r := []rune(strings.TrimPrefix(id, Agent.IDPrefix))
	if len(r) > 8 {
		r = r[:8]
	}
	return string(r)
}
