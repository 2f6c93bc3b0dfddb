package text

import (
	"encoding/json"
	"strings"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/kimi"
)

// kimiLines reads a Kimi Code conversation (agents/main/wire.jsonl): the user's prompts, each reply's text and
// tool calls, each tool's result (named after the call it answers); the cwd is the one profile.bind declares.
// Kimi's other lines (the context it sends, the model's stream, usage) repeat these or hold no conversation.
func kimiLines() func([]byte, int64, func(Entry) error) error {
	cwd := ""
	tools := map[string]string{} // a call's id -> its tool, at most maxOpenCalls remembered
	return func(b []byte, off int64, fn func(Entry) error) error {
		var l kimi.Line
		if json.Unmarshal(b, &l) != nil {
			return nil
		}
		e := Entry{Time: l.At(), Offset: off, Cwd: cwd}
		if c := l.Cwd(); c != "" {
			cwd = OneLine(c, MaxCwd)
			return nil
		}
		if p, ok := l.Prompt(MaxText); ok {
			if strings.TrimSpace(p) == "" {
				return nil
			}
			e.Kind, e.Text = Prompt, Safe(p, MaxText)
			return fn(e)
		}
		m := l.Appended()
		if m == nil {
			return nil
		}
		switch m.Role {
		case "tool":
			e.Kind, e.Tool, e.Text = ToolResult, OneLine(tools[m.ToolCallID], MaxCall), Result(agents.JoinTexts(m.Content, MaxText), false)
			delete(tools, m.ToolCallID)
			return fn(e)
		case "assistant":
		default:
			return nil // the user's message again, which turn.prompt gave
		}
		if t := agents.JoinTexts(m.Content, MaxText); strings.TrimSpace(t) != "" {
			e.Kind, e.Text = Reply, Safe(t, MaxText)
			if err := fn(e); err != nil {
				return err
			}
		}
		return agents.EachElement(m.ToolCalls, func(el []byte) error {
			var call kimi.ToolCall
			if json.Unmarshal(el, &call) != nil {
				return nil
			}
			if len(tools) >= maxOpenCalls {
				clear(tools) // a conversation of more open calls: the oldest results go unnamed
			}
			tools[call.ID] = call.Name
			args, _ := json.Marshal(call.Arguments)
			e.Kind, e.Tool, e.Text = ToolCall, OneLine(call.Name, MaxCall), Call(call.Name, args)
			return fn(e)
		})
	}
}
