package text

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/gemini"
	"github.com/sessionfs/sessionfs/layout"
)

// geminiReader reads a Gemini CLI chat: message lines {"id", "type", "timestamp", "content", "toolCalls"} and
// {"$set": {...}} lines that replace fields, the whole "messages" list included, so the chat is what stands at the
// end of the file. It cannot resume at an offset: a follower reads it again and skips what it passed.
//
// A session writes the chat, and one line of 16 MiB can hold 350,000 tool calls: a reader that held each message's
// entries until the end of the file (a later line may rewrite any message) took 27 bytes of memory for each byte
// it read. It reads the file twice instead. The first pass holds where each message's last version stands (its
// line, and its place in a $set's list), for maxGeminiMessages messages at most; the second reads each message
// again from there, in the chat's order, and passes its entries on as it decodes its lists one element at a time.
// What it holds is that index (tens of bytes a message), a $set's line and one message's line (MaxLine each);
// what it passes on is bounded too: maxGeminiEntries entries, then a Note says the rest was left out, and past
// maxGeminiHeld bytes of text each text is cut to a line.
type geminiReader struct{}

// geminiMessage is a message's head; its lists are decoded one element at a time, from where they stand.
type geminiMessage struct {
	ID        string        `json:"id"`
	Type      string        `json:"type"` // user, gemini, info, error, warning
	Timestamp time.Time     `json:"timestamp"`
	Content   agents.RawRef `json:"content"`
	ToolCalls agents.RawRef `json:"toolCalls"`
}

type geminiCall struct {
	Name          string        `json:"name"`
	Args          agents.RawRef `json:"args"`
	Status        string        `json:"status"`
	ResultDisplay agents.RawRef `json:"resultDisplay"`
	Result        agents.RawRef `json:"result"`
}

// geminiAt is where a message's last version stands: its line (offset, and length without the newline) and,
// for one of a $set's list, its bytes within the line (to 0: the whole line).
type geminiAt struct {
	off      int64
	n        int32
	from, to int32
}

// What a Gemini chat's reading holds and passes on (variables for tests).
var (
	maxGeminiMessages = gemini.MaxMessages // messages followed; others left out, a Note says how many
	maxGeminiEntries  = 500_000            // entries passed on; past them a Note says the rest was left out
	maxGeminiHeld     = 32 << 20           // bytes of text passed on whole; past them each text is a line
)

var errGeminiBudget = errors.New("the chat's budget of entries is spent")

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

	// The first pass: where each message stands.
	keys := gemini.NewKeys()
	var order []gemini.Key
	at := map[gemini.Key]geminiAt{}
	dropped := 0 // messages left out past maxGeminiMessages
	add := func(m *geminiMessage, a geminiAt) {
		if len(m.ID) > gemini.MaxID {
			return
		}
		k := keys.Of(m.ID)
		if _, ok := at[k]; !ok {
			if len(order) >= maxGeminiMessages {
				dropped++
				return
			}
			order = append(order, k)
		}
		at[k] = a
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
				Messages agents.RawRef `json:"messages"`
			} `json:"$set"`
		}
		if json.Unmarshal(b, &l) != nil {
			return nil
		}
		switch {
		case l.Set != nil && agents.IsList(l.Set.Messages):
			order, at, dropped = nil, map[gemini.Key]geminiAt{}, 0
			_ = agents.EachElement(l.Set.Messages, func(el []byte) error {
				var m geminiMessage
				from := cap(b) - cap(el) // el is b's (RawRef), from there
				if from < 0 || from+len(el) > len(b) || &b[from] != &el[0] {
					return errGeminiPart // a decoder that copied: no place in the line to read it again from
				}
				if json.Unmarshal(el, &m) == nil && m.ID != "" {
					add(&m, geminiAt{off: off, n: int32(n), from: int32(from), to: int32(from + len(el))})
				}
				return nil
			})
		case l.ID != "" && l.Type != "":
			add(&l.geminiMessage, geminiAt{off: off, n: int32(n)})
		}
		return nil
	})
	if err != nil && err != io.EOF {
		return from, err
	}

	// The second: each message again, its entries passed on within the budgets.
	entries, held := 0, 0
	emit := func(e Entry) error {
		entries++
		if entries <= from.done {
			return nil
		}
		from.done = entries
		return fn(e)
	}
	budget := func(e Entry) error {
		if entries >= maxGeminiEntries {
			return errGeminiBudget
		}
		if held > maxGeminiHeld && len(e.Text) > MaxCall {
			e.Text = OneLine(e.Text, MaxCall) // past the budget, each text a line
		}
		held += len(e.Text)
		return emit(e)
	}
	for _, e := range long {
		if err := emit(e); err != nil {
			return from, err
		}
	}
	var set, line []byte // the $set's line the messages are from, and a message's own
	setOff := int64(-1)
	for _, k := range order {
		a := at[k]
		var b []byte
		if a.to > 0 {
			if setOff != a.off {
				set, setOff = readLine(f, set, a.off, a.n), a.off
			}
			if int(a.to) > len(set) {
				continue // the file changed since
			}
			b = set[a.from:a.to]
		} else {
			line = readLine(f, line, a.off, a.n)
			b = line
		}
		var m geminiMessage
		if json.Unmarshal(b, &m) != nil || keys.Of(m.ID) != k {
			continue // the file changed since
		}
		if err := geminiEntries(&m, a.off, budget); err == errGeminiBudget {
			err = emit(Entry{Kind: Note, Offset: a.off, Text: fmt.Sprintf(
				"(the rest of the chat left out: more than the %d entries read)", maxGeminiEntries)})
			if err != nil {
				return from, err
			}
			break
		} else if err != nil {
			return from, err
		}
	}
	if dropped > 0 {
		if err := emit(Entry{Kind: Note, Text: fmt.Sprintf("(%d more messages left out: more than the %d read)", dropped, maxGeminiMessages)}); err != nil {
			return from, err
		}
	}
	return from, nil
}

// readLine reads the line of n bytes at off into buf (empty if the file no longer holds it).
func readLine(f io.ReaderAt, buf []byte, off int64, n int32) []byte {
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := f.ReadAt(buf, off); err != nil {
		return buf[:0]
	}
	return trimCR(buf)
}

// geminiEntries passes on the entries of one message: its text, then its tool calls with their results, decoded
// one at a time.
func geminiEntries(m *geminiMessage, off int64, fn func(Entry) error) error {
	e := Entry{Time: m.Timestamp, Offset: off}
	t := strings.TrimSpace(geminiText(m.Content))
	switch {
	case t == "" || m.Type == "user" && strings.HasPrefix(t, "<session_context>"):
		// no words, or the context Gemini sends first
	case m.Type == "user":
		e.Kind, e.Text = Prompt, Safe(t, MaxText)
	case m.Type == "gemini":
		e.Kind, e.Text = Reply, Safe(t, MaxText)
	default: // info, error, warning
		e.Kind, e.Text = Note, Safe(m.Type+": "+t, MaxText)
	}
	if e.Kind != 0 {
		if err := fn(e); err != nil {
			return err
		}
	}
	return agents.EachElement(m.ToolCalls, func(el []byte) error {
		var c geminiCall
		if json.Unmarshal(el, &c) != nil {
			return nil
		}
		tool := OneLine(c.Name, MaxCall)
		if err := fn(Entry{Kind: ToolCall, Time: m.Timestamp, Offset: off, Tool: tool, Text: Call(c.Name, json.RawMessage(c.Args))}); err != nil {
			return err
		}
		if c.Status == "" && len(c.Result) == 0 {
			return nil
		}
		res := jsonText(json.RawMessage(c.ResultDisplay))
		if res == "" {
			res = geminiResult(c.Result)
		}
		return fn(Entry{Kind: ToolResult, Time: m.Timestamp, Offset: off, Tool: tool,
			Text: Result(res, c.Status == "error" || c.Status == "cancelled")})
	})
}

var errGeminiPart = errors.New("not a part")

// geminiText is a message's content as text (rawText's, its parts decoded one at a time): a string, or a list of
// parts {"text"} joined by newlines, one of another type shown as [type]; "" for anything else.
func geminiText(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	if isString(json.RawMessage(raw)) {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var b strings.Builder
	err := agents.EachElement(raw, func(el []byte) error {
		var p struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(el, &p) != nil {
			return errGeminiPart
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		if p.Type == "text" || p.Text != "" {
			b.WriteString(p.Text)
		} else {
			b.WriteString("[" + p.Type + "]")
		}
		return nil
	})
	if err != nil {
		return ""
	}
	return b.String()
}

// geminiResult is a tool's result as Gemini keeps it: a list of {"functionResponse": {"response": ...}}, decoded
// one at a time.
func geminiResult(raw []byte) string {
	var b strings.Builder
	first := true
	err := agents.EachElement(raw, func(el []byte) error {
		var p struct {
			FunctionResponse *struct {
				Response json.RawMessage `json:"response"`
			} `json:"functionResponse"`
		}
		if json.Unmarshal(el, &p) != nil {
			return errGeminiPart
		}
		if p.FunctionResponse != nil {
			t, _ := responseText(p.FunctionResponse.Response)
			if !first {
				b.WriteByte('\n')
			}
			first = false
			b.WriteString(t)
		}
		return nil
	})
	if err != nil {
		return ""
	}
	return b.String()
}
