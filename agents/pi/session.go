package pi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/agents"
)

// entry is a line of a pi session file (docs/session-format.md, pi 1.6.0, version 3): the header
// {"type": "session", "id", "timestamp", "cwd"}, then entries {"type", "id", "parentId", "timestamp", ...}, a
// "message" one holding {"role": "user"|"assistant"|"toolResult"|..., "content": a string or blocks}. The
// content is decoded one block at a time (block): a line can hold a million of them.
type entry struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Cwd       string    `json:"cwd"`
	Message   *struct {
		Role     string        `json:"role"`
		Content  agents.RawRef `json:"content"`
		ToolName string        `json:"toolName"`
		Command  string        `json:"command"`
		Sections *struct {
			Cwd string `json:"cwd"`
		} `json:"sections"`
	} `json:"message"`
}

// block is one content block: text, thinking, a tool call or an image.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// maxPrompt bounds the first prompt a listing keeps (its title).
const maxPrompt = 16 << 10

var errEnough = errors.New("enough")

// read adds a session file's lines to c: the cwds (the header's, then each one pi moved to), every entry's time,
// its prompts and replies.
func read(c *agents.Conversation, r io.Reader) {
	c.Malformed, _ = agents.ScanJSON(r, func(e *entry) {
		c.At(e.Timestamp)
		if e.Type == "session" {
			c.AddCwd(e.Cwd)
			return
		}
		if e.Type == "message" && e.Message != nil && e.Message.Role == "system" && e.Message.Sections != nil {
			c.AddCwd(Cwd(e.Message.Sections.Cwd))
		}
		if e.Type != "message" || e.Message == nil || (e.Message.Role != "user" && e.Message.Role != "assistant") {
			return
		}
		c.Messages++
		if c.FirstPrompt == "" && e.Message.Role == "user" {
			c.FirstPrompt = Text(e.Message.Content, maxPrompt)
		}
	})
}

// Text is the text of a message's content, a string or a list of blocks whose "text" ones are joined by spaces,
// up to limit bytes (< 0: all of it).
func Text(content []byte, limit int) string {
	if s, ok := stringOf(content); ok {
		return agents.Cut(s, limit)
	}
	var b bytes.Buffer
	_ = agents.EachElement(content, func(el []byte) error {
		var p block
		if json.Unmarshal(el, &p) != nil || p.Type != "text" || p.Text == "" {
			return nil
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p.Text)
		if limit >= 0 && b.Len() > limit {
			return errEnough
		}
		return nil
	})
	return agents.Cut(b.String(), limit)
}

// Cwd is the cwd a system message's "cwd" section names: pi declares the cwd in its first system prompt, and again
// in a system message each time a session goes on in another one, as "<cwd>\n/the/cwd\n</cwd>". "" for none.
func Cwd(section string) string {
	in, ok := strings.CutPrefix(strings.TrimSpace(section), "<cwd>")
	if !ok {
		return ""
	}
	in, ok = strings.CutSuffix(in, "</cwd>")
	if !ok {
		return ""
	}
	return strings.TrimSpace(in)
}

// stringOf is the JSON value raw as a string, when it is one.
func stringOf(raw []byte) (string, bool) {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// line reads a session line for watch: a prompt, a reply's text and tool calls, a tool's result, a command the
// user ran with !.
func line(b []byte) (time.Time, string, []string, error) {
	var e entry
	if err := json.Unmarshal(b, &e); err != nil || e.Type != "message" || e.Message == nil {
		return e.Timestamp, "", nil, err
	}
	m := e.Message
	switch m.Role {
	case "user":
		return e.Timestamp, "user", agents.Texts([]string{Text(m.Content, agents.MaxWatchParts*200)}), nil
	case "toolResult":
		return e.Timestamp, "user", []string{"← " + m.ToolName + " result"}, nil
	case "bashExecution":
		return e.Timestamp, "user", []string{"! " + m.Command}, nil
	case "assistant":
	default:
		return e.Timestamp, "", nil, nil
	}
	var parts []string
	_ = agents.EachElement(m.Content, func(el []byte) error {
		if len(parts) >= agents.MaxWatchParts {
			return errEnough // watch shows no more of them
		}
		var p block
		_ = json.Unmarshal(el, &p)
		switch p.Type {
		case "text":
			parts = append(parts, agents.Texts([]string{p.Text})...)
		case "toolCall":
			parts = append(parts, agents.Call(p.Name, p.Arguments))
		}
		return nil
	})
	return e.Timestamp, "assistant", parts, nil
}
