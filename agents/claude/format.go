package claude

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sessionfs/sessionfs/agents"
)

// Line renders a transcript entry as one readable line: time, role, then the text or the tool call. Entries that
// are not messages (metadata, attachments, queue events) render as "" and are skipped by callers.
func Line(e *Entry, agent string) string {
	if !e.IsMessage() {
		return ""
	}
	var parts []string
	for _, p := range e.Parts() {
		switch p.Type {
		case "text":
			if t := strings.TrimSpace(p.Text); t != "" {
				parts = append(parts, t)
			}
		case "tool_use":
			parts = append(parts, fmt.Sprintf("→ %s(%s)", p.Name, compact(p.Input)))
		case "tool_result":
			parts = append(parts, "← tool result")
		}
	}
	if len(parts) == 0 {
		return ""
	}
	who := e.Type
	if agent != "" {
		who = "[" + agent + "] " + who
	}
	return agents.Render(e.Timestamp, who, parts)
}

func compact(raw json.RawMessage) string {
	var v map[string]any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	var kv []string
	for _, k := range []string{"description", "command", "file_path", "pattern", "prompt"} {
		if s, ok := v[k].(string); ok {
			kv = append(kv, s)
		}
	}
	if len(kv) == 0 {
		return fmt.Sprintf("%d args", len(v))
	}
	return strings.Join(kv, ", ")
}
