package text

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// Kind of an entry.
type Kind uint8

const (
	Prompt     Kind = iota + 1 // what the user said
	Reply                      // what the model said
	ToolCall                   // a tool the model called, with its arguments
	ToolResult                 // what the tool gave back, summarized
	Note                       // a summary, a system line, a compaction, a line left out
)

var kindNames = [...]string{Prompt: "prompt", Reply: "reply", ToolCall: "tool_call", ToolResult: "tool_result", Note: "note"}

// String names the kind as --json writes it.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// MarshalText writes the kind's name (JSON).
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a kind's name.
func (k *Kind) UnmarshalText(b []byte) error {
	for i, n := range kindNames {
		if n != "" && n == string(b) {
			*k = Kind(i)
			return nil
		}
	}
	return fmt.Errorf("unknown entry kind %q", b)
}

// Entry is one thing said or done in a conversation.
type Entry struct {
	Kind Kind      `json:"kind"`
	Time time.Time `json:"time,omitzero"` // zero if the agent wrote none
	Cwd  string    `json:"cwd,omitempty"` // the cwd it ran in, "" if the agent wrote none (one line, safe)
	// Text is safe for a terminal (Safe) and bounded (MaxText); for a call, the tool and its arguments shortened
	// to one line; for a result, a one-line summary.
	Text     string `json:"text"`
	Tool     string `json:"tool,omitempty"`     // for calls and results
	Subagent string `json:"subagent,omitempty"` // the subagent's id inside one (one line, safe); "" for the main conversation
	// Offset is where the entry's line starts in its file (a subagent's in the subagent's file), in bytes; in a
	// Codex thread of several rollouts, past the rollouts before its own; for opencode, whose messages are rows,
	// the message's place in the conversation.
	Offset int64 `json:"offset"`
}

// Bounds of what an entry holds.
const (
	MaxText = 256 << 10 // a prompt's, a reply's or a note's text
	MaxCall = 200       // a call's or a result's line
	MaxCwd  = 4096      // a cwd (PATH_MAX)
	// MaxLine is the longest line read: a longer one (a tool result of 50 MB) is left out, a Note saying so.
	MaxLine = 16 << 20
)

// ErrUnknownAgent is returned for an agent this package has no reader for.
var ErrUnknownAgent = errors.New("no reader for this agent's conversations")

// Entries calls fn for each entry of conversation c (from a.Conversations) of agent a in the session open as sess,
// in order: a subagent's entries follow the call that started it where the transcript says which it was, else
// they come after the conversation's own. It stops at fn's first error and returns it.
func Entries(sess *layout.Dir, a *agents.Agent, c agents.Conversation, fn func(Entry) error) error {
	r, err := readerOf(a)
	if err != nil {
		return err
	}
	_, err = r.read(sess, c, position{}, fn)
	return err
}

// position is how far a reader has read a conversation: the byte offset of the next line of its main file, and of
// each subagent's; done counts entries for a reader that cannot resume at an offset (it reads again and skips).
type position struct {
	main  int64
	subs  map[string]int64
	parts map[string]int64 // of a conversation of several files, by the name each stands for (lines.go)
	done  int
}

// reader reads one agent's conversations from a position, returning the position after the last complete line.
type reader interface {
	read(sess *layout.Dir, c agents.Conversation, from position, fn func(Entry) error) (position, error)
	// files are the files beneath the session a read of c (whose file is rel) opens (Files).
	files(sess *layout.Dir, rel string, c agents.Conversation) []string
}

func readerOf(a *agents.Agent) (reader, error) {
	if a == nil {
		return nil, ErrUnknownAgent
	}
	switch a.Name {
	case "claude":
		return claudeReader{}, nil
	case "codex":
		return lineReader{a, codexLines}, nil
	case "qwen":
		return lineReader{a, qwenLines}, nil
	case "pi":
		return lineReader{a, piLines}, nil
	case "kimi":
		return lineReader{a, kimiLines}, nil
	case "copilot":
		return lineReader{a, copilotLines}, nil
	case "gemini":
		return geminiReader{}, nil
	case "opencode":
		return opencodeReader{}, nil
	}
	return nil, fmt.Errorf("%s: %w", a.Name, ErrUnknownAgent)
}

// relOf is the conversation's file beneath the session: agents list it as the session's path joined with it.
func relOf(sess *layout.Dir, c agents.Conversation) (string, error) {
	rel, ok := strings.CutPrefix(c.Path, sess.Name()+"/")
	if !ok || rel == "" {
		return "", fmt.Errorf("%s: conversation %s is not in this session (%s)", sess.Name(), c.ID, c.Path)
	}
	return rel, nil
}
