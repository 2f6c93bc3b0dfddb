package gemini

import (
	"encoding/json"
	"io"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// chat follows a Gemini chat: a first line {"sessionId", "startTime", ...}, message lines {"id", "type",
// "timestamp", "content"}, and {"$set": {...}} lines that replace fields, the whole "messages" list included.
type chat struct {
	order []string
	msgs  map[string]message
	id    string
}

type message struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Content   json.RawMessage `json:"content"`
}

func (g *chat) add(m message) {
	if g.msgs == nil {
		g.msgs = map[string]message{}
	}
	if _, ok := g.msgs[m.ID]; !ok {
		g.order = append(g.order, m.ID)
	}
	g.msgs[m.ID] = m
}

func (g *chat) line(c *agents.Conversation, line []byte) error {
	var e struct {
		message
		SessionID string `json:"sessionId"`
		StartTime time.Time
		Set       *struct {
			Messages  *[]message `json:"messages"`
			SessionID string     `json:"sessionId"`
		} `json:"$set"`
	}
	if err := json.Unmarshal(line, &e); err != nil {
		return err
	}
	switch {
	case e.SessionID != "":
		g.id = e.SessionID
		c.At(e.StartTime)
	case e.Set != nil && e.Set.Messages != nil:
		g.order, g.msgs = nil, nil
		for _, m := range *e.Set.Messages {
			g.add(m)
		}
	case e.ID != "" && e.Type != "":
		g.add(e.message)
	}
	return nil
}

// read reads a chat into c: its messages as they stand at the end, and its id from the first line (the file name
// holds only its start).
func read(c *agents.Conversation, r io.Reader) {
	var g chat
	c.Malformed, _ = agents.ScanLines(r, func(line []byte) error { return g.line(c, line) })
	if strings.HasPrefix(strings.ToLower(g.id), strings.ToLower(c.ID)) && layout.ValidateID(g.id) == nil {
		c.ID = g.id
	}
	for _, id := range g.order {
		m := g.msgs[id]
		c.At(m.Timestamp)
		if m.Type != "user" && m.Type != "gemini" {
			continue
		}
		t := text(m.Content)
		if m.Type == "user" && strings.HasPrefix(t, "<session_context>") {
			continue // the context Gemini sends first, not the user's words
		}
		c.Messages++
		if c.FirstPrompt == "" && m.Type == "user" {
			c.FirstPrompt = t
		}
	}
}

// text is a message's text: content is a string or a list of parts.
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var ts []string
	for _, p := range parts {
		ts = append(ts, p.Text)
	}
	return strings.Join(ts, " ")
}

// line reads a chat line for watch: a message {"id", "type": "user"|"gemini", "content", "toolCalls"}.
func line(b []byte) (time.Time, string, []string, error) {
	var m struct {
		message
		ToolCalls []struct {
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		} `json:"toolCalls"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.ID == "" {
		return time.Time{}, "", nil, err
	}
	role := map[string]string{"user": "user", "gemini": "assistant"}[m.Type]
	t := text(m.Content)
	if role == "" || strings.HasPrefix(t, "<session_context>") {
		return m.Timestamp, "", nil, nil
	}
	parts := agents.Texts([]string{t})
	for _, c := range m.ToolCalls {
		parts = append(parts, agents.Call(c.Name, c.Args))
	}
	return m.Timestamp, role, parts, nil
}
