package text

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// claudeReader reads Claude Code's transcripts: one JSON object a line, the messages among metadata. Subagents
// are in <uuid>/subagents/agent-<id>.jsonl beside the transcript (CLI 2.1.x) or, in older transcripts, lines of
// the transcript itself marked isSidechain.
type claudeReader struct{}

// claudeLine is what a transcript line says that a reader shows; unknown fields are ignored.
type claudeLine struct {
	Type             string          `json:"type"`
	Subtype          string          `json:"subtype"`
	Timestamp        time.Time       `json:"timestamp"`
	Cwd              string          `json:"cwd"`
	IsSidechain      bool            `json:"isSidechain"`
	IsMeta           bool            `json:"isMeta"`
	IsCompactSummary bool            `json:"isCompactSummary"`
	AgentID          string          `json:"agentId"`
	Summary          string          `json:"summary"` // type "summary"
	Content          json.RawMessage `json:"content"` // type "system"
	ToolUseResult    json.RawMessage `json:"toolUseResult"`
	Message          *struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

// claudePart is one content block of a message.
type claudePart struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`          // tool_use
	Name      string          `json:"name"`        // tool_use
	Input     json.RawMessage `json:"input"`       // tool_use
	ToolUseID string          `json:"tool_use_id"` // tool_result
	Content   json.RawMessage `json:"content"`     // tool_result
	IsError   bool            `json:"is_error"`    // tool_result
}

// claudeRead is one read of a conversation: its files' positions and the tools its calls named.
type claudeRead struct {
	sess  *layout.Dir
	subs  string            // the subagents' folder beneath the session
	pos   position          // where each file was read to
	tools map[string]string // tool_use id -> tool name, for results
	fn    func(Entry) error
	// following: only whole lines are read (a follower reads the last one once its newline is written).
	following bool
	seen      map[[2]uint64]bool // the files read (device, inode): a file of many names is read once
}

func (claudeReader) read(sess *layout.Dir, c agents.Conversation, from position, fn func(Entry) error) (position, error) {
	rel, err := relOf(sess, c)
	if err != nil {
		return from, err
	}
	r := &claudeRead{sess: sess, subs: claudeSubs(rel, c), pos: from,
		tools: map[string]string{}, fn: fn, following: from.subs != nil, seen: map[[2]uint64]bool{}}
	if r.pos.subs == nil {
		r.pos.subs = map[string]int64{}
	}
	if r.pos.main, err = r.file(rel, "", r.pos.main); err != nil {
		return r.pos, err
	}
	// The subagents the transcript did not name (or all of them after a first read: what they appended since).
	for _, id := range claudeSubagents(sess, r.subs) {
		if err := r.subagent(id); err != nil {
			return r.pos, err
		}
	}
	return r.pos, nil
}

// subagentID is the id of a subagent's transcript named name (agent-<id>.jsonl).
func subagentID(name string) (string, bool) {
	id, ok := strings.CutPrefix(name, "agent-")
	if !ok {
		return "", false
	}
	id, ok = strings.CutSuffix(id, ".jsonl")
	return id, ok && id != "" && layout.ValidateID(id) == nil
}

// subagent reads subagent id's transcript from where it was left.
func (r *claudeRead) subagent(id string) error {
	off, err := r.file(claudeSubagentFile(r.subs, id), id, r.pos.subs[id])
	if errors.Is(err, errNoSubagent) {
		return nil // not there (yet): nothing held for it, however many lines name it
	}
	if err == nil || off > r.pos.subs[id] {
		r.pos.subs[id] = off
	}
	return err
}

// errNoSubagent: a subagent's file that is not there, or not a regular file.
var errNoSubagent = errors.New("no such subagent file")

// file reads the transcript rel (a subagent's when sub is its id) from offset start.
func (r *claudeRead) file(rel, sub string, start int64) (int64, error) {
	f, err := r.sess.OpenRegular(rel, -1)
	if err != nil {
		if sub != "" {
			return start, errNoSubagent // gone or not regular: nothing of it to show
		}
		return start, err
	}
	defer f.Close()
	if st, ok := statOf(f); ok {
		k := [2]uint64{st.Dev, st.Ino}
		if r.seen[k] {
			return start, errNoSubagent // another name of a file read already (hard links): read once
		}
		r.seen[k] = true
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return start, err
	}
	return scanLines(f, start, !r.following, func(b []byte, off, n int64) error {
		if b == nil {
			return r.fn(tooLong(off, n, sub))
		}
		if !mayShow(b) {
			return nil // metadata, attachments, queue events: not decoded at all
		}
		var l claudeLine
		if json.Unmarshal(b, &l) != nil {
			return nil // torn or garbage: as the listings, skipped
		}
		return r.line(&l, off, sub)
	})
}

// statOf is f's stat.
func statOf(f *os.File) (*syscall.Stat_t, bool) {
	fi, err := f.Stat()
	if err != nil {
		return nil, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return st, ok
}

// line passes the entries of one transcript line.
func (r *claudeRead) line(l *claudeLine, off int64, sub string) error {
	if sub == "" && l.IsSidechain {
		sub = OneLine(l.AgentID, MaxCall) // an older transcript's subagent, inline
		if sub == "" {
			sub = "sidechain"
		}
	}
	e := Entry{Time: l.Timestamp, Cwd: OneLine(l.Cwd, MaxCwd), Subagent: sub, Offset: off}
	emit := func(k Kind, tool, text string) error {
		e.Kind, e.Tool, e.Text = k, tool, text
		return r.fn(e)
	}
	switch l.Type {
	case "summary":
		if l.Summary != "" {
			return emit(Note, "", "Summary: "+Safe(l.Summary, MaxText))
		}
		return nil
	case "system":
		if l.Subtype == "compact_boundary" {
			return emit(Note, "", "Conversation compacted")
		}
		if s := rawText(l.Content); strings.TrimSpace(s) != "" {
			return emit(Note, "", Safe(s, MaxText))
		}
		return nil
	case "user", "assistant":
	default:
		return nil // metadata, attachments, queue events
	}
	if l.Message == nil || l.IsMeta {
		return nil // the context Claude adds itself
	}
	for _, p := range claudeParts(l.Message.Content) {
		var err error
		switch p.Type {
		case "text":
			if strings.TrimSpace(p.Text) == "" {
				continue
			}
			switch {
			case l.IsCompactSummary:
				err = emit(Note, "", "Compaction summary: "+Safe(p.Text, MaxText))
			case l.Type == "user" && strings.HasPrefix(p.Text, "<task-notification>"):
				// Claude's word that a background subagent finished (2.1.3xx), not the user's
				err = emit(Note, "", OneLine(tag(p.Text, "summary")+": "+tag(p.Text, "result"), MaxCall))
			case l.Type == "user":
				err = emit(Prompt, "", Safe(p.Text, MaxText))
			default:
				err = emit(Reply, "", Safe(p.Text, MaxText))
			}
		case "tool_use":
			if len(r.tools) > 4096 {
				clear(r.tools) // a hostile transcript's millions of calls: results then show no tool name
			}
			r.tools[p.ID] = p.Name
			err = emit(ToolCall, OneLine(p.Name, MaxCall), Call(p.Name, p.Input))
		case "tool_result":
			tool := r.tools[p.ToolUseID]
			err = emit(ToolResult, OneLine(tool, MaxCall), Result(rawText(p.Content), p.IsError))
		}
		if err != nil {
			return err
		}
	}
	if sub == "" && len(l.ToolUseResult) > 0 && l.ToolUseResult[0] == '{' && bytes.Contains(l.ToolUseResult, []byte(`"agentId"`)) {
		// The result of the call that started a subagent: its conversation comes here, nested.
		var res struct {
			AgentID string `json:"agentId"`
		}
		if json.Unmarshal(l.ToolUseResult, &res) == nil && res.AgentID != "" && layout.ValidateID(res.AgentID) == nil {
			if _, seen := r.pos.subs[res.AgentID]; !seen {
				return r.subagent(res.AgentID)
			}
		}
	}
	return nil
}

// shown are the types of the lines a reader shows, as they appear in a line that has one.
var shown = [][]byte{[]byte(`"type":"user"`), []byte(`"type":"assistant"`), []byte(`"type":"system"`), []byte(`"type":"summary"`)}

// mayShow reports whether line b may be one a reader shows: a cheap look before decoding it (most of a
// transcript's bytes are attachments and metadata).
func mayShow(b []byte) bool {
	for _, t := range shown {
		if bytes.Contains(b, t) {
			return true
		}
	}
	// Claude writes no space in its JSON; a line that has some (written by another tool) is decoded to know.
	return bytes.Contains(b, []byte(`"type" `)) || bytes.Contains(b, []byte(`"type": `))
}

// claudeParts reads a message's content: a string is one text part.
func claudeParts(raw json.RawMessage) []claudePart {
	var s string
	if isString(raw) && json.Unmarshal(raw, &s) == nil {
		return []claudePart{{Type: "text", Text: s}}
	}
	var parts []claudePart
	_ = json.Unmarshal(raw, &parts)
	return parts
}

// rawText is the text of a content that is a string or a list of {"type": "text", "text"} blocks (others, an
// image, are named).
func rawText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if isString(raw) {
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		if p.Type == "text" || p.Text != "" {
			b.WriteString(p.Text)
		} else {
			b.WriteString("[" + p.Type + "]")
		}
	}
	return b.String()
}

// tag is the text of the first <name>...</name> in s ("" if none).
func tag(s, name string) string {
	_, rest, ok := strings.Cut(s, "<"+name+">")
	if !ok {
		return ""
	}
	text, _, _ := strings.Cut(rest, "</"+name+">")
	return text
}

// isString reports whether JSON value raw is a string (a value that is not one is never decoded as one: decoding
// scans the whole value first).
func isString(raw json.RawMessage) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '"'
}
