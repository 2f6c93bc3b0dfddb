package qwen

import (
	"encoding/json"
	"io"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/agents"
)

// entry is a chat line: {"type": "user"|"assistant"|"tool_result", "timestamp", "cwd", "message": {"parts"}}.
type entry struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Cwd       string    `json:"cwd"`
	Message   *struct {
		Parts []struct {
			Text         string `json:"text"`
			FunctionCall *struct {
				Name string          `json:"name"`
				Args json.RawMessage `json:"args"`
			} `json:"functionCall"`
			FunctionResponse json.RawMessage `json:"functionResponse"`
		} `json:"parts"`
	} `json:"message"`
}

func read(c *agents.Conversation, r io.Reader) {
	c.Malformed, _ = agents.ScanJSON(r, func(e *entry) {
		c.At(e.Timestamp)
		c.AddCwd(e.Cwd)
		if (e.Type != "user" && e.Type != "assistant") || e.Message == nil {
			return
		}
		c.Messages++
		if c.FirstPrompt == "" && e.Type == "user" {
			var text []string
			for _, p := range e.Message.Parts {
				text = append(text, p.Text)
			}
			c.FirstPrompt = strings.Join(text, " ")
		}
	})
}

// line reads a chat line for watch: text parts, tool calls and their results.
func line(b []byte) (time.Time, string, []string, error) {
	var e entry
	if err := json.Unmarshal(b, &e); err != nil || e.Message == nil {
		return time.Time{}, "", nil, err
	}
	var parts []string
	for _, p := range e.Message.Parts {
		switch {
		case p.FunctionCall != nil:
			parts = append(parts, agents.Call(p.FunctionCall.Name, p.FunctionCall.Args))
		case len(p.FunctionResponse) > 0:
			parts = append(parts, "← tool result")
		default:
			parts = append(parts, agents.Texts([]string{p.Text})...)
		}
	}
	switch e.Type {
	case "user", "assistant":
		return e.Timestamp, e.Type, parts, nil
	case "tool_result":
		return e.Timestamp, "user", parts, nil
	}
	return e.Timestamp, "", nil, nil
}
