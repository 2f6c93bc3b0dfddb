package text

import (
	"encoding/json"
	"fmt"
	"strings"
)

// argKeys are the arguments that say what a call does, in the order shown: a call shows these alone when it has
// any (the command, not its timeout), else all of its arguments.
var argKeys = []string{"description", "command", "cmd", "file_path", "filePath", "path", "absolute_path", "pattern",
	"query", "url", "prompt", "subagent_type"}

// Call is a tool call on one line: the tool and its arguments shortened, Tool(arg, arg…) (MaxCall bytes at most).
// args is the JSON the agent wrote: an object, or a string holding one (Codex's).
func Call(tool string, args json.RawMessage) string {
	var s string
	if isString(args) && json.Unmarshal(args, &s) == nil {
		args = json.RawMessage(s)
	}
	var shown string
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) == nil {
		var kv []string
		for _, k := range argKeys {
			if v := argText(m[k]); v != "" {
				kv = append(kv, v)
			}
		}
		shown = strings.Join(kv, ", ")
		if len(kv) == 0 && len(m) > 0 {
			shown = string(args)
		}
	} else {
		shown = string(args)
	}
	return OneLine(tool+"("+OneLine(shown, MaxCall)+")", MaxCall)
}

// argText is an argument as a person reads it: a string as it is, a list of strings (an argv) joined by spaces,
// anything else as JSON; "" for none.
func argText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if isString(raw) && json.Unmarshal(raw, &s) == nil {
		return s
	}
	var argv []string
	if json.Unmarshal(raw, &argv) == nil {
		return strings.Join(argv, " ")
	}
	return string(raw)
}

// Result summarizes a tool's output on one line: its size and its first line that says something.
func Result(out string, failed bool) string {
	lines := strings.Count(strings.TrimRight(out, "\n"), "\n") + 1
	first := ""
	for l := range strings.SplitSeq(out, "\n") {
		if strings.TrimSpace(l) != "" {
			first = l
			break
		}
	}
	var b strings.Builder
	if failed {
		b.WriteString("error: ")
	}
	switch {
	case strings.TrimSpace(out) == "":
		b.WriteString("(no output)")
	case lines == 1:
		b.WriteString(first)
	default:
		fmt.Fprintf(&b, "%d lines: %s", lines, first)
	}
	return OneLine(b.String(), MaxCall)
}
