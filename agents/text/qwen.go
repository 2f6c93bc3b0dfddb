package text

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/agents"
)

// qwenLine is a line of a Qwen Code chat: {"type": "user"|"assistant"|"tool_result"|"system", "timestamp", "cwd",
// "subtype", "message": {"parts"}}.
type qwenLine struct {
	Type      string    `json:"type"`
	Subtype   string    `json:"subtype"`
	Timestamp time.Time `json:"timestamp"`
	Cwd       string    `json:"cwd"`
	Message   *struct {
		// Parts are decoded one at a time (qwenPart): a line of 16 MiB can hold a million of them.
		Parts agents.RawRef `json:"parts"`
	} `json:"message"`
}

type qwenPart struct {
	Text         string `json:"text"`
	Thought      bool   `json:"thought"`
	FunctionCall *struct {
		Name string        `json:"name"`
		Args agents.RawRef `json:"args"`
	} `json:"functionCall"`
	FunctionResponse *struct {
		Name     string        `json:"name"`
		Response agents.RawRef `json:"response"`
	} `json:"functionResponse"`
}

// qwenLines reads a Qwen chat: its prompts, replies, calls and results; compressions as notes (its telemetry and
// snapshots are left out).
func qwenLines() func([]byte, int64, func(Entry) error) error {
	return func(b []byte, off int64, fn func(Entry) error) error {
		var l qwenLine
		if json.Unmarshal(b, &l) != nil {
			return nil
		}
		e := Entry{Time: l.Timestamp, Cwd: OneLine(l.Cwd, MaxCwd), Offset: off}
		if l.Type == "system" {
			if l.Subtype == "chat_compression" {
				e.Kind, e.Text = Note, "Conversation compacted"
				return fn(e)
			}
			return nil
		}
		if l.Message == nil {
			return nil
		}
		return agents.EachElement(l.Message.Parts, func(el []byte) error {
			var p qwenPart
			if json.Unmarshal(el, &p) != nil {
				return nil
			}
			switch {
			case p.FunctionCall != nil:
				e.Kind, e.Tool, e.Text = ToolCall, OneLine(p.FunctionCall.Name, MaxCall), Call(p.FunctionCall.Name, json.RawMessage(p.FunctionCall.Args))
			case p.FunctionResponse != nil:
				e.Kind, e.Tool = ToolResult, OneLine(p.FunctionResponse.Name, MaxCall)
				e.Text = Result(responseText(json.RawMessage(p.FunctionResponse.Response)))
			case p.Thought || strings.TrimSpace(p.Text) == "":
				return nil
			case l.Type == "user":
				e.Kind, e.Tool, e.Text = Prompt, "", Safe(p.Text, MaxText)
			case l.Type == "assistant":
				e.Kind, e.Tool, e.Text = Reply, "", Safe(p.Text, MaxText)
			default:
				return nil
			}
			return fn(e)
		})
	}
}

// responseText is a function response's output: {"output": ...} or {"error": ...} (Gemini's and Qwen's form).
func responseText(raw json.RawMessage) (string, bool) {
	var r struct {
		Output json.RawMessage `json:"output"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return rawText(raw), false
	}
	if len(r.Error) > 0 && string(r.Error) != "null" {
		return jsonText(r.Error), true
	}
	return jsonText(r.Output), false
}

// jsonText is a JSON value as text: a string's content, anything else as written.
func jsonText(raw json.RawMessage) string {
	if t := rawText(raw); t != "" {
		return t
	}
	if string(raw) == "null" {
		return ""
	}
	return string(raw)
}
