package agents

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// FileOf names the agent and the short conversation id (its first 8 characters) of a conversation file of an
// agent other than Claude, rel being its path beneath the session folder; ok is false for every other file.
func FileOf(rel string) (a *Agent, conv string, ok bool) {
	parts := strings.Split(rel, "/")
	name := parts[len(parts)-1]
	var m []string
	switch {
	case len(parts) == 6 && parts[0] == Codex.Dir && parts[1] == "sessions":
		a, m = Codex, codexFile.FindStringSubmatch(name)
	case len(parts) == 5 && parts[0] == Gemini.Dir && parts[1] == "tmp" && parts[3] == "chats":
		a, m = Gemini, geminiFile.FindStringSubmatch(name)
	case len(parts) == 5 && parts[0] == Qwen.Dir && parts[1] == "projects" && parts[3] == "chats":
		a, m = Qwen, qwenFile.FindStringSubmatch(name)
	}
	if m == nil {
		return nil, "", false
	}
	conv = strings.ToLower(m[1])
	if len(conv) > 8 {
		conv = conv[:8]
	}
	return a, conv, true
}

// Line renders one line of agent a's conversation file as watch prints it: time, "[agent] role", then the text
// or the tool call; "" for a line that is not a message (metadata, Gemini's rewrites of the whole history on
// resume, the context the agents add themselves).
func Line(a *Agent, line []byte) string {
	var (
		ts    time.Time
		role  string
		parts []string
		err   error
	)
	switch a {
	case Codex:
		ts, role, parts, err = codexParts(line)
	case Gemini:
		ts, role, parts, err = geminiParts(line)
	case Qwen:
		ts, role, parts, err = qwenParts(line)
	}
	if err != nil || role == "" || len(parts) == 0 {
		return ""
	}
	stamp := "--:--:--"
	if !ts.IsZero() {
		stamp = ts.Local().Format("15:04:05")
	}
	text := strings.Join(strings.Fields(strings.Join(parts, " ")), " ")
	if r := []rune(text); len(r) > 200 {
		text = string(r[:199]) + "…"
	}
	return fmt.Sprintf("%s %-9s %s", stamp, "["+a.Name+"] "+role, text)
}

func call(name string, args any) string {
	b, _ := json.Marshal(args)
	if s, ok := args.(string); ok {
		b = []byte(s) // Codex gives the arguments as a JSON string
	}
	if r := []rune(string(b)); len(r) > 80 {
		b = []byte(string(r[:79]) + "…")
	}
	return fmt.Sprintf("→ %s(%s)", name, b)
}

func texts(ts []string) []string {
	var out []string
	for _, t := range ts {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// codexParts reads a rollout line: response items of type message (user, assistant), function_call and
// function_call_output.
func codexParts(line []byte) (time.Time, string, []string, error) {
	var e struct {
		Timestamp time.Time `json:"timestamp"`
		Type      string    `json:"type"`
		Payload   struct {
			Type      string `json:"type"`
			Role      string `json:"role"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
			Content   []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(line, &e); err != nil || e.Type != "response_item" {
		return time.Time{}, "", nil, err
	}
	p := e.Payload
	switch p.Type {
	case "message":
		if p.Role != "user" && p.Role != "assistant" {
			return e.Timestamp, "", nil, nil
		}
		var ts []string
		for _, c := range p.Content {
			ts = append(ts, c.Text)
		}
		ts = texts(ts)
		if p.Role == "user" && len(ts) > 0 && strings.HasPrefix(ts[0], "<") {
			return e.Timestamp, "", nil, nil // context Codex adds, not the user's words
		}
		return e.Timestamp, p.Role, ts, nil
	case "function_call", "custom_tool_call":
		return e.Timestamp, "assistant", []string{call(p.Name, p.Arguments)}, nil
	case "function_call_output", "custom_tool_call_output":
		return e.Timestamp, "user", []string{"← tool result"}, nil
	}
	return e.Timestamp, "", nil, nil
}

// geminiParts reads a chat line: a message {"id", "type": "user"|"gemini", "content", "toolCalls"}.
func geminiParts(line []byte) (time.Time, string, []string, error) {
	var m struct {
		geminiMessage
		ToolCalls []struct {
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		} `json:"toolCalls"`
	}
	if err := json.Unmarshal(line, &m); err != nil || m.ID == "" {
		return time.Time{}, "", nil, err
	}
	role := map[string]string{"user": "user", "gemini": "assistant"}[m.Type]
	text := geminiText(m.Content)
	if role == "" || strings.HasPrefix(text, "<session_context>") {
		return m.Timestamp, "", nil, nil
	}
	parts := texts([]string{text})
	for _, c := range m.ToolCalls {
		parts = append(parts, call(c.Name, c.Args))
	}
	return m.Timestamp, role, parts, nil
}

// qwenParts reads a chat line: {"type": "user"|"assistant"|"tool_result", "message": {"parts": [...]}}.
func qwenParts(line []byte) (time.Time, string, []string, error) {
	var e struct {
		Type      string    `json:"type"`
		Timestamp time.Time `json:"timestamp"`
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
	if err := json.Unmarshal(line, &e); err != nil || e.Message == nil {
		return time.Time{}, "", nil, err
	}
	var parts []string
	for _, p := range e.Message.Parts {
		switch {
		case p.FunctionCall != nil:
			parts = append(parts, call(p.FunctionCall.Name, p.FunctionCall.Args))
		case len(p.FunctionResponse) > 0:
			parts = append(parts, "← tool result")
		default:
			parts = append(parts, texts([]string{p.Text})...)
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
