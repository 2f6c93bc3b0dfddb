package text

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/pi"
)

// piLine is a line of a pi session file (pi 1.6.0, version 3): the header {"type": "session", "cwd"}, then
// entries of a tree (id, parentId) in the order pi appended them: "message" ({"role", "content", ...}),
// "compaction" and "branch_summary" ({"summary"}), and others that hold no conversation (model changes, labels,
// extensions' state).
type piLine struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Cwd       string    `json:"cwd"`
	Summary   string    `json:"summary"`
	Message   *struct {
		Role string `json:"role"`
		// Content is a string or a list of blocks, decoded one at a time (piBlock): a line of 16 MiB can hold a
		// million of them.
		Content      agents.RawRef `json:"content"`
		ToolName     string        `json:"toolName"`
		IsError      bool          `json:"isError"`
		StopReason   string        `json:"stopReason"`
		ErrorMessage string        `json:"errorMessage"`
		// A command the user ran with ! (role bashExecution), and the summaries pi makes (branchSummary,
		// compactionSummary).
		Command  string `json:"command"`
		Output   string `json:"output"`
		ExitCode *int   `json:"exitCode"`
		Summary  string `json:"summary"`
		// A system message's "cwd" section names the cwd the session goes on in (pi.Cwd).
		Sections *struct {
			Cwd string `json:"cwd"`
		} `json:"sections"`
	} `json:"message"`
}

type piBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// piLines reads a pi session: its prompts, replies, tool calls and results, the commands the user ran, and its
// compactions and branch summaries as notes. Every branch of its tree is shown, in the order pi wrote it; the
// cwd is the header's, then each one a system message says the session went on in.
func piLines() func([]byte, int64, func(Entry) error) error {
	cwd := ""
	return func(b []byte, off int64, fn func(Entry) error) error {
		var l piLine
		if json.Unmarshal(b, &l) != nil {
			return nil
		}
		e := Entry{Time: l.Timestamp, Offset: off}
		switch l.Type {
		case "session":
			cwd = OneLine(l.Cwd, MaxCwd)
			return nil
		case "compaction":
			e.Kind, e.Cwd, e.Text = Note, cwd, summary("Compaction summary", l.Summary, "Conversation compacted")
			return fn(e)
		case "branch_summary":
			e.Kind, e.Cwd, e.Text = Note, cwd, summary("Branch summary", l.Summary, "Went back to an earlier point")
			return fn(e)
		case "message":
		default:
			return nil
		}
		m := l.Message
		if m == nil {
			return nil
		}
		e.Cwd = cwd
		switch m.Role {
		case "user":
			t := piText(m.Content)
			if strings.TrimSpace(t) == "" {
				return nil
			}
			e.Kind, e.Text = Prompt, Safe(t, MaxText)
			return fn(e)
		case "toolResult":
			e.Kind, e.Tool, e.Text = ToolResult, OneLine(m.ToolName, MaxCall), Result(piText(m.Content), m.IsError)
			return fn(e)
		case "bashExecution":
			e.Kind, e.Tool, e.Text = ToolCall, "bash", Call("bash", mustJSON(map[string]string{"command": m.Command}))
			if err := fn(e); err != nil {
				return err
			}
			e.Kind, e.Text = ToolResult, Result(m.Output, m.ExitCode != nil && *m.ExitCode != 0)
			return fn(e)
		case "system":
			if m.Sections != nil {
				if c := pi.Cwd(m.Sections.Cwd); c != "" {
					cwd = OneLine(c, MaxCwd)
				}
			}
			return nil
		case "assistant":
		default:
			return nil // extensions' messages, summaries (their entries are shown)
		}
		err := agents.EachElement(m.Content, func(el []byte) error {
			var p piBlock
			if json.Unmarshal(el, &p) != nil {
				return nil
			}
			switch {
			case p.Type == "toolCall":
				e.Kind, e.Tool, e.Text = ToolCall, OneLine(p.Name, MaxCall), Call(p.Name, p.Arguments)
			case p.Type == "text" && strings.TrimSpace(p.Text) != "":
				e.Kind, e.Tool, e.Text = Reply, "", Safe(p.Text, MaxText)
			default:
				return nil // thinking, empty text
			}
			return fn(e)
		})
		if err != nil || m.StopReason != "error" || strings.TrimSpace(m.ErrorMessage) == "" {
			return err
		}
		e.Kind, e.Tool, e.Text = Note, "", Safe("error: "+m.ErrorMessage, MaxText)
		return fn(e)
	}
}

// piText is the text of a content: a string, or its text blocks (an image named) one a line.
func piText(content []byte) string {
	if isString(json.RawMessage(content)) {
		var s string
		_ = json.Unmarshal(content, &s)
		return s
	}
	var b strings.Builder
	_ = agents.EachElement(content, func(el []byte) error {
		var p piBlock
		if json.Unmarshal(el, &p) != nil {
			return nil
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		if p.Type == "text" {
			b.WriteString(p.Text)
		} else {
			b.WriteString("[" + p.Type + "]")
		}
		if b.Len() > MaxText {
			return errPiEnough
		}
		return nil
	})
	return b.String()
}

var errPiEnough = fmt.Errorf("enough")

// summary is a note of a summary pi made: prefix: text, or empty when it has none.
func summary(prefix, text, empty string) string {
	if strings.TrimSpace(text) == "" {
		return empty
	}
	return prefix + ": " + Safe(text, MaxText)
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
