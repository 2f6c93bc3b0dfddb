package text

import (
	"encoding/json"
	"errors"
	"io/fs"
	"strings"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/opencode"
	"github.com/sessionfs/sessionfs/layout"
)

// opencodeReader reads an opencode conversation: rows of the session's database, read through its untrusted
// reader (opencode.Rows), its subagents' sessions with it. A follower reads it again and skips what it passed.
type opencodeReader struct{}

type opencodeMessage struct {
	Role string `json:"role"`
	Time struct {
		Completed int64 `json:"completed"`
	} `json:"time"`
	Path struct {
		Cwd string `json:"cwd"`
	} `json:"path"`
	Error *struct {
		Name string `json:"name"`
		Data struct {
			Message string `json:"message"`
		} `json:"data"`
	} `json:"error"`
}

type opencodePart struct {
	Type      string `json:"type"` // text, tool, reasoning, compaction, step-start, file, patch, ...
	Text      string `json:"text"`
	Synthetic bool   `json:"synthetic"`
	Tool      string `json:"tool"`
	State     struct {
		Status string          `json:"status"`
		Input  json.RawMessage `json:"input"`
		Output string          `json:"output"`
		Error  string          `json:"error"`
	} `json:"state"`
}

func (opencodeReader) read(sess *layout.Dir, c agents.Conversation, from position, fn func(Entry) error) (position, error) {
	n, order := 0, int64(0)
	following := from.subs != nil
	emit := func(e Entry) error {
		n++
		if n <= from.done {
			return nil
		}
		from.done = n
		return fn(e)
	}
	err := opencode.Rows(sess, c.ID, func(r opencode.Row) error {
		order++
		var m opencodeMessage
		if json.Unmarshal([]byte(r.Data), &m) != nil {
			return nil
		}
		e := Entry{Time: r.Created, Cwd: OneLine(m.Path.Cwd, MaxCwd), Offset: order}
		if r.Session != c.ID {
			e.Subagent = OneLine(r.Session, MaxCall)
		}
		if following && !complete(m, r.Parts) {
			return errIncomplete // a prompt whose text is not in, a reply still streaming: read it next time
		}
		for _, raw := range r.Parts {
			var p opencodePart
			if json.Unmarshal([]byte(raw), &p) != nil {
				continue
			}
			var es []Entry
			switch {
			case p.Type == "text" && !p.Synthetic && strings.TrimSpace(p.Text) != "":
				e.Kind, e.Tool, e.Text = Reply, "", Safe(p.Text, MaxText)
				if m.Role == "user" {
					e.Kind = Prompt
				}
				es = append(es, e)
			case p.Type == "tool":
				e.Kind, e.Tool, e.Text = ToolCall, OneLine(p.Tool, MaxCall), Call(p.Tool, p.State.Input)
				es = append(es, e)
				switch p.State.Status {
				case "completed":
					e.Kind, e.Text = ToolResult, Result(p.State.Output, false)
					es = append(es, e)
				case "error":
					e.Kind, e.Text = ToolResult, Result(p.State.Error, true)
					es = append(es, e)
				}
			case p.Type == "compaction":
				e.Kind, e.Tool, e.Text = Note, "", "Conversation compacted"
				es = append(es, e)
			}
			for _, x := range es {
				if err := emit(x); err != nil {
					return err
				}
			}
		}
		if m.Error != nil {
			e.Kind, e.Tool, e.Text = Note, "", Safe("error: "+m.Error.Name+" "+m.Error.Data.Message, MaxText)
			return emit(e)
		}
		return nil
	})
	if errors.Is(err, errIncomplete) || errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return from, err
}

// errIncomplete stops a read at a prompt opencode has not finished writing.
var errIncomplete = errors.New("a message not complete yet")

// complete: a reply opencode finished (or gave up on), a prompt whose text part is in.
func complete(m opencodeMessage, parts []string) bool {
	if m.Role != "user" {
		return m.Role != "assistant" || m.Time.Completed > 0 || m.Error != nil
	}
	for _, raw := range parts {
		var p opencodePart
		if json.Unmarshal([]byte(raw), &p) == nil && p.Type == "text" {
			return true
		}
	}
	return false
}
