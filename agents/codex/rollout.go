package codex

import (
	"encoding/json"
	"io"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/agents"
)

// item is a line of a rollout: {"timestamp", "type", "payload"}.
type item struct {
	Timestamp time.Time `json:"timestamp"`
	Type      string    `json:"type"`
	Payload   struct {
		Type      string `json:"type"`
		Role      string `json:"role"`
		Cwd       string `json:"cwd"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		Content   []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"payload"`
}

// text is a message's text; added is true for the user items Codex writes itself (<environment_context> and the
// like), which are not the user's words.
func (e *item) text() (ts []string, added bool) {
	for _, c := range e.Payload.Content {
		ts = append(ts, c.Text)
	}
	return ts, e.Payload.Role == "user" && strings.HasPrefix(strings.TrimSpace(strings.Join(ts, " ")), "<")
}

// isMessage: a response item of role user or assistant.
func (e *item) isMessage() bool {
	return e.Type == "response_item" && e.Payload.Type == "message" && (e.Payload.Role == "user" || e.Payload.Role == "assistant")
}

// read adds a rollout's lines to c: a thread's rollouts are read one after the other into one conversation.
func read(c *agents.Conversation, r io.Reader) {
	malformed, _ := agents.ScanJSON(r, func(e *item) {
		c.At(e.Timestamp)
		switch {
		case e.Type == "session_meta" || e.Type == "turn_context":
			c.AddCwd(e.Payload.Cwd)
		case e.isMessage():
			ts, added := e.text()
			if added {
				return
			}
			c.Messages++
			if c.FirstPrompt == "" && e.Payload.Role == "user" {
				c.FirstPrompt = strings.Join(ts, " ")
			}
		}
	})
	c.Malformed += malformed
}

// line reads a rollout line for watch: messages, function_call and function_call_output items.
func line(b []byte) (time.Time, string, []string, error) {
	var e item
	if err := json.Unmarshal(b, &e); err != nil || e.Type != "response_item" {
		return time.Time{}, "", nil, err
	}
	p := e.Payload
	switch p.Type {
	case "message":
		if !e.isMessage() {
			return e.Timestamp, "", nil, nil
		}
		ts, added := e.text()
		if added {
			return e.Timestamp, "", nil, nil
		}
		return e.Timestamp, p.Role, agents.Texts(ts), nil
	case "function_call", "custom_tool_call":
		return e.Timestamp, "assistant", []string{agents.Call(p.Name, p.Arguments)}, nil
	case "function_call_output", "custom_tool_call_output":
		return e.Timestamp, "user", []string{"← tool result"}, nil
	}
	return e.Timestamp, "", nil, nil
}
