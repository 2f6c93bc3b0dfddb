package text

import (
	"encoding/json"
	"strings"
	"time"
)

// codexLine is a line of a Codex rollout: {"timestamp", "type", "payload"}.
type codexLine struct {
	Timestamp time.Time `json:"timestamp"`
	Type      string    `json:"type"`
	Payload   struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		Cwd       string          `json:"cwd"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"` // function_call: a JSON string
		Input     json.RawMessage `json:"input"`     // custom_tool_call
		CallID    string          `json:"call_id"`
		Output    json.RawMessage `json:"output"` // a string, or {"content": ...}
		Message   string          `json:"message"`
		Action    json.RawMessage `json:"action"` // local_shell_call
		// in the session_meta of a reverted thread's later rollout: the prefix of the thread it goes on from
		HistoryBase json.RawMessage `json:"history_base"`
		Content     []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"payload"`
}

// codexLines reads a rollout: the response items (messages, calls, their outputs), compactions; the cwd from
// session_meta and turn_context lines; a revert (a session_meta naming the history it goes on from: a reverted
// thread's later rollout, read after those before it).
func codexLines() func([]byte, int64, func(Entry) error) error {
	cwd := ""
	tools := map[string]string{} // call_id -> tool
	return func(b []byte, off int64, fn func(Entry) error) error {
		var l codexLine
		if json.Unmarshal(b, &l) != nil {
			return nil
		}
		p := &l.Payload
		e := Entry{Time: l.Timestamp, Offset: off}
		switch l.Type {
		case "session_meta", "turn_context":
			if p.Cwd != "" {
				cwd = OneLine(p.Cwd, MaxCwd)
			}
			if l.Type == "session_meta" && len(p.HistoryBase) > 0 && string(p.HistoryBase) != "null" {
				e.Kind, e.Cwd, e.Text = Note, cwd, "Thread reverted: what follows goes on from an earlier point of it"
				return fn(e)
			}
			return nil
		case "compacted":
			e.Kind, e.Text = Note, "Conversation compacted"
			if strings.TrimSpace(p.Message) != "" {
				e.Text = "Compaction summary: " + Safe(p.Message, MaxText)
			}
			e.Cwd = cwd
			return fn(e)
		case "response_item":
		default:
			return nil
		}
		e.Cwd = cwd
		switch p.Type {
		case "message":
			var ts []string
			for _, c := range p.Content {
				ts = append(ts, c.Text)
			}
			t := strings.Join(ts, "\n")
			switch {
			case strings.TrimSpace(t) == "":
				return nil
			case p.Role == "user" && strings.HasPrefix(strings.TrimSpace(t), "<"):
				return nil // the context Codex sends itself (<environment_context>, <user_instructions>)
			case p.Role == "user":
				e.Kind = Prompt
			case p.Role == "assistant":
				e.Kind = Reply
			default:
				return nil // developer and system instructions
			}
			e.Text = Safe(t, MaxText)
		case "function_call", "custom_tool_call", "local_shell_call":
			args := p.Arguments
			if p.Type == "custom_tool_call" {
				args = p.Input
			}
			if p.Type == "local_shell_call" {
				p.Name, args = "shell", p.Action
			}
			if len(tools) > 4096 {
				clear(tools)
			}
			tools[p.CallID] = p.Name
			e.Kind, e.Tool, e.Text = ToolCall, OneLine(p.Name, MaxCall), Call(p.Name, args)
		case "function_call_output", "custom_tool_call_output":
			e.Kind, e.Tool = ToolResult, OneLine(tools[p.CallID], MaxCall)
			e.Text = Result(codexOutput(p.Output))
		default:
			return nil // reasoning, configuration updates
		}
		return fn(e)
	}
}

// codexOutput is a call's output: a string, or {"content": string or [{"text"}], "success"}; failed when Codex
// says it did not succeed.
func codexOutput(raw json.RawMessage) (string, bool) {
	var s string
	if isString(raw) && json.Unmarshal(raw, &s) == nil {
		var inner struct {
			Output   string `json:"output"`
			Metadata struct {
				ExitCode *int `json:"exit_code"`
			} `json:"metadata"`
		}
		if json.Unmarshal([]byte(s), &inner) == nil && inner.Output != "" {
			return inner.Output, inner.Metadata.ExitCode != nil && *inner.Metadata.ExitCode != 0
		}
		return s, false
	}
	var o struct {
		Content json.RawMessage `json:"content"`
		Success *bool           `json:"success"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return "", false
	}
	return rawText(o.Content), o.Success != nil && !*o.Success
}
