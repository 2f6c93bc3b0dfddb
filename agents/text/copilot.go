package text

import (
	"encoding/json"
	"strings"

	"github.com/sessionfs/sessionfs/agents/copilot"
)

// maxOpenCalls bounds the tool calls whose names a reader (copilotLines, kimiLines) remembers until their results: a session can
// start a million of them, each result naming only its call's id.
const maxOpenCalls = 4096

// copilotLines reads a Copilot CLI session (events.jsonl): its prompts, replies, the tools it ran and their
// results, under the cwd of each run (session.start's, then each session.resume's). The calls are taken from
// tool.execution_start, the tools as they ran (a reply's toolRequests ask for the same ones); the rest (the system
// prompt Copilot sends with every turn, turns, usage, hooks) holds no conversation.
func copilotLines() func([]byte, int64, func(Entry) error) error {
	cwd := ""
	tools := map[string]string{} // the tool of each call id whose result has not come yet
	return func(b []byte, off int64, fn func(Entry) error) error {
		var l copilot.Event
		if json.Unmarshal(b, &l) != nil {
			return nil
		}
		if c := l.Cwd(); c != "" {
			cwd = OneLine(c, MaxCwd)
		}
		e := Entry{Time: l.Timestamp, Offset: off, Cwd: cwd}
		d := &l.Data
		switch l.Type {
		case "user.message":
			t := copilot.Text(d.Content)
			if strings.TrimSpace(t) == "" {
				return nil
			}
			e.Kind, e.Text = Prompt, Safe(t, MaxText)
		case "assistant.message":
			t := copilot.Text(d.Content)
			if strings.TrimSpace(t) == "" {
				return nil // a reply that only calls tools: the calls come as they run
			}
			e.Kind, e.Text = Reply, Safe(t, MaxText)
		case "tool.execution_start":
			if len(tools) < maxOpenCalls {
				tools[d.ToolCallID] = d.ToolName
			}
			e.Kind, e.Tool, e.Text = ToolCall, OneLine(d.ToolName, MaxCall), Call(d.ToolName, json.RawMessage(d.Arguments))
		case "tool.execution_complete":
			name := tools[d.ToolCallID]
			delete(tools, d.ToolCallID)
			out := ""
			if d.Result != nil {
				out = copilot.Text(d.Result.Content)
			}
			if out == "" && len(d.Error) > 0 {
				out = errorText(d.Error)
			}
			e.Kind, e.Tool, e.Text = ToolResult, OneLine(name, MaxCall), Result(out, d.Success != nil && !*d.Success)
		default:
			return nil
		}
		return fn(e)
	}
}

// errorText is a failed tool's error: a string, or an object's "message".
func errorText(raw []byte) string {
	if s := copilot.Text(raw); s != "" {
		return s
	}
	var m struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(raw, &m)
	return m.Message
}
