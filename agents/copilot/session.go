package copilot

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/sessionfs/sessionfs/agents"
)

// Event is a line of a session's events.jsonl (Copilot CLI 1.0.102): {"type", "data", "id", "timestamp",
// "parentId"}. A run begins with "session.start" (the first) or "session.resume" (each later one), whose
// data.context.cwd is the cwd it ran in; "user.message" and "assistant.message" hold the prompt and the reply in
// data.content (a reply's tool calls in data.toolRequests); "tool.execution_start" and "tool.execution_complete"
// a tool's run. Strings and lists are kept as they stand in the line (RawRef) and decoded only where needed: a
// line can hold a system prompt of 40 KB on every turn, or a million tool requests. agents/text reads it too.
type Event struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      struct {
		Content      agents.RawRef `json:"content"`
		ToolRequests agents.RawRef `json:"toolRequests"`
		Context      *struct {
			Cwd string `json:"cwd"`
		} `json:"context"`
		ToolCallID string        `json:"toolCallId"`
		ToolName   string        `json:"toolName"`
		Arguments  agents.RawRef `json:"arguments"`
		Success    *bool         `json:"success"`
		Result     *struct {
			Content agents.RawRef `json:"content"`
		} `json:"result"`
		Error agents.RawRef `json:"error"`
	} `json:"data"`
}

// Cwd is the cwd a run's first event names ("" for every other event).
func (e *Event) Cwd() string {
	if (e.Type == "session.start" || e.Type == "session.resume") && e.Data.Context != nil {
		return e.Data.Context.Cwd
	}
	return ""
}

// ToolRequest is one tool call of a reply's toolRequests.
type ToolRequest struct {
	ToolCallID string        `json:"toolCallId"`
	Name       string        `json:"name"`
	Arguments  agents.RawRef `json:"arguments"`
}

// maxPrompt bounds the first prompt a listing keeps (its title).
const maxPrompt = 16 << 10

var errEnough = errors.New("enough")

// read adds a session's events to c: the cwd of each run, every event's time, its prompts and replies.
func read(c *agents.Conversation, r io.Reader) {
	c.Malformed, _ = agents.ScanJSON(r, func(e *Event) {
		c.At(e.Timestamp)
		c.AddCwd(e.Cwd())
		if e.Type != "user.message" && e.Type != "assistant.message" {
			return
		}
		c.Messages++
		if c.FirstPrompt == "" && e.Type == "user.message" {
			c.FirstPrompt = agents.Cut(Text(e.Data.Content), maxPrompt)
		}
	})
}

// Text is a message's content: a string, or "" for anything else.
func Text(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// EachToolRequest calls fn with each tool call of a reply's toolRequests, decoded one at a time, until fn returns
// an error; an element that is not a tool call is passed over.
func EachToolRequest(raw []byte, fn func(ToolRequest) error) error {
	return agents.EachElement(raw, func(el []byte) error {
		var t ToolRequest
		if json.Unmarshal(el, &t) != nil {
			return nil
		}
		return fn(t)
	})
}

// line reads an event for watch: a prompt, a reply's text and tool calls, a tool's result.
func line(b []byte) (time.Time, string, []string, error) {
	var e Event
	if err := json.Unmarshal(b, &e); err != nil {
		return e.Timestamp, "", nil, err
	}
	switch e.Type {
	case "user.message":
		return e.Timestamp, "user", agents.Texts([]string{agents.Cut(Text(e.Data.Content), agents.MaxWatchParts*200)}), nil
	case "tool.execution_complete":
		if e.Data.Success != nil && !*e.Data.Success {
			return e.Timestamp, "user", []string{"← tool failed"}, nil
		}
		return e.Timestamp, "user", []string{"← tool result"}, nil
	case "assistant.message":
	default:
		return e.Timestamp, "", nil, nil
	}
	parts := agents.Texts([]string{agents.Cut(Text(e.Data.Content), agents.MaxWatchParts*200)})
	_ = EachToolRequest(e.Data.ToolRequests, func(t ToolRequest) error {
		if len(parts) >= agents.MaxWatchParts {
			return errEnough // watch shows no more of them
		}
		parts = append(parts, agents.Call(t.Name, json.RawMessage(t.Arguments)))
		return nil
	})
	return e.Timestamp, "assistant", parts, nil
}
