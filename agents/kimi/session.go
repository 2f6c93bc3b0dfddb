package kimi

import (
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/sessionfs/sessionfs/agents"
)

// Line is a line of a Kimi Code conversation, agents/main/wire.jsonl (Kimi Code 2.1.0, protocol 1.5): every
// line has a "type" and its "time" in milliseconds. The conversation is in three of them: "turn.prompt" (what the
// user asked: "input" blocks, "origin" {"kind": "user"}), "agent.message.appended" ({"message": {"message":
// {"role": "assistant"|"tool"|"user", "content": blocks, "toolCalls"}, "meta"}}: a reply, its tool calls, a
// tool's result), and "profile.bind", which declares the cwd the conversation began in. The rest record Kimi's
// own workings (the context it sends, the model's stream, usage). Lists are decoded one element at a time.
type Line struct {
	Type   string        `json:"type"`
	Time   int64         `json:"time"`
	Input  agents.RawRef `json:"input"`
	Origin *struct {
		Kind string `json:"kind"`
	} `json:"origin"`
	EnvironmentDisclosure *struct {
		Cwd string `json:"cwd"`
	} `json:"environmentDisclosure"`
	Message *struct {
		Message *Message `json:"message"`
	} `json:"message"`
}

// Message is a message Kimi appended to a conversation.
type Message struct {
	Role       string        `json:"role"`
	Content    agents.RawRef `json:"content"`
	ToolCalls  agents.RawRef `json:"toolCalls"`
	ToolCallID string        `json:"toolCallId"` // a tool's result: the call it answers
}

// ToolCall is one of a reply's tool calls: its arguments are a JSON text in a string.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// At is the line's time.
func (l *Line) At() time.Time {
	if l.Time <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(l.Time)
}

// Prompt is the text the user asked for in a turn.prompt line, and whether the line is one: a prompt another
// origin made (a hook's, a steer) is not the user's.
func (l *Line) Prompt(limit int) (string, bool) {
	if l.Type != "turn.prompt" || l.Origin != nil && l.Origin.Kind != "user" {
		return "", false
	}
	return agents.JoinTexts(l.Input, limit), true
}

// Appended is the message of an agent.message.appended line, or nil.
func (l *Line) Appended() *Message {
	if l.Type != "agent.message.appended" || l.Message == nil {
		return nil
	}
	return l.Message.Message
}

// Cwd is the cwd a profile.bind line declares, or "".
func (l *Line) Cwd() string {
	if l.Type != "profile.bind" || l.EnvironmentDisclosure == nil {
		return ""
	}
	return l.EnvironmentDisclosure.Cwd
}

// maxPrompt bounds the first prompt a listing keeps (its title).
const maxPrompt = 16 << 10

// read adds a conversation's lines to c: the cwd it began in, every line's time, its prompts and replies.
func read(c *agents.Conversation, r io.Reader) {
	c.Malformed, _ = agents.ScanJSON(r, func(l *Line) {
		c.At(l.At())
		if cwd := l.Cwd(); cwd != "" {
			c.AddCwd(cwd)
		}
		if p, ok := l.Prompt(maxPrompt); ok {
			c.Messages++
			if c.FirstPrompt == "" {
				c.FirstPrompt = p
			}
			return
		}
		if m := l.Appended(); m != nil && m.Role == "assistant" {
			c.Messages++
		}
	})
}

// line reads a line for watch: a prompt, a reply's text and tool calls, a tool's result.
func line(b []byte) (time.Time, string, []string, error) {
	var l Line
	if err := json.Unmarshal(b, &l); err != nil {
		return time.Time{}, "", nil, err
	}
	if p, ok := l.Prompt(agents.MaxWatchParts * 200); ok {
		return l.At(), "user", agents.Texts([]string{p}), nil
	}
	m := l.Appended()
	if m == nil {
		return l.At(), "", nil, nil
	}
	switch m.Role {
	case "tool":
		return l.At(), "user", []string{"← tool result"}, nil
	case "assistant":
	default:
		return l.At(), "", nil, nil // the user's message again, which turn.prompt gave
	}
	parts := agents.Texts([]string{agents.JoinTexts(m.Content, agents.MaxWatchParts*200)})
	_ = agents.EachElement(m.ToolCalls, func(el []byte) error {
		if len(parts) >= agents.MaxWatchParts {
			return errEnough
		}
		var call ToolCall
		if json.Unmarshal(el, &call) == nil {
			parts = append(parts, agents.Call(call.Name, call.Arguments))
		}
		return nil
	})
	return l.At(), "assistant", parts, nil
}

var errEnough = errors.New("enough")
