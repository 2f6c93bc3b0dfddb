package qwen

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
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

const (
	// maxPrompt bounds the first prompt a listing keeps (its title).
	maxPrompt = 16 << 10
	// maxWatchParts bounds the parts of a watch line: watch shows 200 characters of them, which fewer parts fill.
	maxWatchParts = 256
)

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
			var b strings.Builder
			first := true
			_ = agents.EachElement(e.Message.Parts, func(el []byte) error {
				var p part
				_ = json.Unmarshal(el, &p)
				if !first {
					b.WriteByte(' ')
				}
				first = false
				b.WriteString(p.Text)
				if b.Len() > maxPrompt {
					return errEnough
				}
				return nil
			})
			c.FirstPrompt = cut(b.String(), maxPrompt)
		}
	})
}

// cut is s up to limit bytes, ending where a character does.
func cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	for limit > 0 && s[limit]&0xc0 == 0x80 {
		limit--
	}
	return s[:limit]
}

// line reads a chat line for watch: text parts, tool calls and their results.
func line(b []byte) (time.Time, string, []string, error) {
	var e entry
	if err := json.Unmarshal(b, &e); err != nil || e.Message == nil {
		return time.Time{}, "", nil, err
	}
	var parts []string
	_ = agents.EachElement(e.Message.Parts, func(el []byte) error {
		if len(parts) >= maxWatchParts {
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
