package qwen

import (
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/sessionfs/sessionfs/agents"
)

// entry is a chat line: {"type": "user"|"assistant"|"tool_result", "timestamp", "cwd", "message": {"parts"}}. Its
// parts are decoded one at a time (part): a line can hold a million of them.
type entry struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Cwd       string    `json:"cwd"`
	Message   *struct {
		Parts agents.RawRef `json:"parts"`
	} `json:"message"`
}

type part struct {
	Text         string `json:"text"`
	FunctionCall *struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
	FunctionResponse agents.RawRef `json:"functionResponse"`
}

// maxPrompt bounds the first prompt a listing keeps (its title).
const maxPrompt = 16 << 10

var errEnough = errors.New("enough")

func read(c *agents.Conversation, r io.Reader) {
	c.Malformed, _ = agents.ScanJSON(r, func(e *entry) {
		c.At(e.Timestamp)
		c.AddCwd(e.Cwd)
		if (e.Type != "user" && e.Type != "assistant") || e.Message == nil {
			return
		}
		c.Messages++
		if c.FirstPrompt == "" && e.Type == "user" {
			c.FirstPrompt = agents.JoinTexts(e.Message.Parts, maxPrompt)
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
	_ = agents.EachElement(e.Message.Parts, func(el []byte) error {
		if len(parts) >= agents.MaxWatchParts {
			return errEnough // watch shows no more of them
		}
		var p part
		_ = json.Unmarshal(el, &p)
		switch {
		case p.FunctionCall != nil:
			parts = append(parts, agents.Call(p.FunctionCall.Name, p.FunctionCall.Args))
		case len(p.FunctionResponse) > 0:
			parts = append(parts, "← tool result")
		default:
			parts = append(parts, agents.Texts([]string{p.Text})...)
		}
		return nil
	})
	switch e.Type {
	case "user", "assistant":
		return e.Timestamp, e.Type, parts, nil
	case "tool_result":
		return e.Timestamp, "user", parts, nil
	}
	return e.Timestamp, "", nil, nil
}
