package text

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// geminiReader reads a Gemini CLI chat: message lines {"id", "type", "timestamp", "content", "toolCalls"} and
// {"$set": {...}} lines that replace fields, the whole "messages" list included, so the chat is what stands at the
// end of the file. It cannot resume at an offset: a follower reads it again and skips what it passed.
type geminiReader struct{}

type geminiMessage struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"` // user, gemini, info, error, warning
	Timestamp time.Time       `json:"timestamp"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []struct {
		Name          string          `json:"name"`
		Args          json.RawMessage `json:"args"`
		Status        string          `json:"status"`
		ResultDisplay json.RawMessage `json:"resultDisplay"`
		Result        json.RawMessage `json:"result"`
	} `json:"toolCalls"`
}

func (geminiReader) read(sess *layout.Dir, c agents.Conversation, from position, fn func(Entry) error) (position, error) {
	rel, err := relOf(sess, c)
	if err != nil {
		return from, err
	}
	f, err := sess.OpenRegular(rel, -1)
	if err != nil {
		return from, err
	}
	defer f.Close()
	// Each message's entries, as read (bounded texts): a later line of the same id replaces them.
	var order []string
	msgs := map[string][]Entry{}
	held, dropped := 0, 0 // the bytes of text held; the messages left out past maxGeminiMessages
	add := func(m geminiMessage, off int64) {
		if len(m.ID) > 256 {
			return // no id of Gemini's is that long: a hostile file's, not held
		}
		old, ok := msgs[m.ID]
		if !ok && len(order) >= maxGeminiMessages {
			dropped++
			return
		}
		if !ok {
			order = append(order, m.ID)
		}
		for _, e := range old {
			held -= len(e.Text)
		}
		es := geminiEntries(m, off)
		for i := range es {
			if held > maxGeminiHeld && len(es[i].Text) > MaxCall {
				es[i].Text = OneLine(es[i].Text, MaxCall) // past the budget, each text a line
			}
			held += len(es[i].Text)
		}
		msgs[m.ID] = es
	}
	var long []Entry
	_, err = scanLines(f, 0, true, func(b []byte, off, n int64) error {
		if b == nil {
			long = append(long, tooLong(off, n, ""))
			return nil
		}
		var l struct {
			geminiMessage
			Set *struct {
				Messages *[]geminiMessage `json:"messages"`
			} `json:"$set"`
		}
		if json.Unmarshal(b, &l) != nil {
			return nil
		}
		switch {
		case l.Set != nil && l.Set.Messages != nil:
			order, msgs, held, dropped = nil, map[string][]Entry{}, 0, 0
			for _, m := range *l.Set.Messages {
				if m.ID != "" {
					add(m, off)
				}
			}
		case l.ID != "" && l.Type != "":
			add(l.geminiMessage, off)
		}
		return nil
	})
	if err != nil && err != io.EOF {
		return from, err
	}
	n := 0
	emit := func(e Entry) error {
		n++
		if n <= from.done {
			return nil
		}
		from.done = n
		return fn(e)
	}
	for _, e := range long {
		if err := emit(e); err != nil {
			return from, err
		}
	}
	for _, id := range order {
		for _, e := range msgs[id] {
			if err := emit(e); err != nil {
				return from, err
			}
		}
	}
	if dropped > 0 {
		if err := emit(Entry{Kind: Note, Text: fmt.Sprintf("(%d more messages left out: more than the %d read)", dropped, maxGeminiMessages)}); err != nil {
			return from, err
		}
	}
	return from, nil
}

// A Gemini chat is held whole while read (a later line may rewrite any message): what it holds is bounded, the
// messages kept and the bytes of their texts (past it, each text is cut to a line). Variables for tests.
var (
	maxGeminiMessages = 100_000
	maxGeminiHeld     = 32 << 20
)

// geminiEntries are the entries of one message: its text, then its tool calls with their results.
func geminiEntries(m geminiMessage, off int64) []Entry {
	e := Entry{Time: m.Timestamp, Offset: off}
	var out []Entry
	t := strings.TrimSpace(rawText(m.Content))
	switch {
	case t == "" || m.Type == "user" && strings.HasPrefix(t, "<session_context>"):
		// no words, or the context Gemini sends first
	case m.Type == "user":
		e.Kind, e.Text = Prompt, Safe(t, MaxText)
		out = append(out, e)
	case m.Type == "gemini":
		e.Kind, e.Text = Reply, Safe(t, MaxText)
		out = append(out, e)
	default: // info, error, warning
		e.Kind, e.Text = Note, Safe(m.Type+": "+t, MaxText)
		out = append(out, e)
	}
	for _, c := range m.ToolCalls {
		tool := OneLine(c.Name, MaxCall)
		out = append(out, Entry{Kind: ToolCall, Time: m.Timestamp, Offset: off, Tool: tool, Text: Call(c.Name, c.Args)})
		if c.Status == "" && len(c.Result) == 0 {
			continue
		}
		res := jsonText(c.ResultDisplay)
		if res == "" {
			res = geminiResult(c.Result)
		}
		out = append(out, Entry{Kind: ToolResult, Time: m.Timestamp, Offset: off, Tool: tool,
			Text: Result(res, c.Status == "error" || c.Status == "cancelled")})
	}
	return out
}

// geminiResult is a tool's result as Gemini keeps it: a list of {"functionResponse": {"response": ...}}.
func geminiResult(raw json.RawMessage) string {
	var parts []struct {
		FunctionResponse *struct {
			Response json.RawMessage `json:"response"`
		} `json:"functionResponse"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var ts []string
	for _, p := range parts {
		if p.FunctionResponse != nil {
			t, _ := responseText(p.FunctionResponse.Response)
			ts = append(ts, t)
		}
	}
	return strings.Join(ts, "\n")
}
