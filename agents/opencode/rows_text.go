package opencode

import (
	"database/sql"
	"fmt"
	"time"

	"github.com/sessionfs/sessionfs/layout"
)

// Row is one message of a conversation as opencode stored it, for agents/text to render: read from a private copy
// of the session's database through the untrusted reader, like every read of it.
type Row struct {
	Session string    // the opencode session it belongs to: the conversation's, or a subagent's under it
	Created time.Time // zero if none was recorded
	Data    string    // the message's JSON ({"role", "time", "path", "error", ...})
	Parts   []string  // its parts' JSON, in order
}

// rowsShape is what Rows reads of the database.
var rowsShape = map[string][]string{
	"session": {"id", "parent_id"},
	"message": {"id", "session_id", "time_created", "data"},
	"part":    {"id", "message_id", "data"},
}

// Rows calls fn with each message of conversation id and of its subagents' sessions, in the order they were
// made. No database is no message.
func Rows(sess *layout.Dir, id string, fn func(Row) error) error {
	d, done, err := open(sess, access{within: time.Minute, tables: rowsShape})
	if err != nil {
		return err
	}
	defer done()
	parents, err := parentsOf(d)
	if err != nil {
		return err
	}
	type row struct {
		id, session string
		created     int64
	}
	var msgs []row
	err = d.each(`SELECT id, session_id, time_created FROM message ORDER BY time_created, id`, nil, func(rows *sql.Rows) error {
		var m row
		if rows.Scan(&m.id, &m.session, &m.created) == nil && root(m.session, parents) == id {
			msgs = append(msgs, m)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", dbRel, err)
	}
	for _, m := range msgs {
		r := Row{Session: m.session, Created: ms(m.created)}
		if err := d.row(`SELECT data FROM message WHERE id = ?`, []any{m.id}, &r.Data); err != nil {
			continue // gone since, or not text
		}
		ps, err := partsOf(d, m.id)
		if err != nil {
			return fmt.Errorf("%s: %w", dbRel, err)
		}
		for _, p := range ps {
			r.Parts = append(r.Parts, p.data)
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}
