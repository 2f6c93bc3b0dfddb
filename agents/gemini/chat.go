package gemini

import (
	"encoding/json"
	"errors"
	"hash/maphash"
	"io"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// A chat is written by the session: any number of messages, each with any number of tool calls and parts, in
// lines of up to agents.MaxLine. What a reader holds of it is bounded by budgets, whatever it holds:
const (
	// MaxMessages are the messages a reader follows; a message of another id past them is left out (counted).
	MaxMessages = 100_000
	// MaxID is the longest id followed: no id of Gemini's is that long, a hostile file's is left out.
	MaxID = 256
	// maxPrompt bounds the first prompt a listing keeps (its title); maxPrompts the user's words it holds while it
	// reads (a later line may rewrite any message: which one is the first prompt is told at the end).
	maxPrompt  = 16 << 10
	maxPrompts = 1 << 20
)

// Key stands for a message's id in what a reader holds: 16 bytes whatever the id's length, a hash with seeds
// drawn for each reading (no chat can be made whose ids collide).
type Key [2]uint64

// Keys makes the Keys of one reading.
type Keys struct{ a, b maphash.Seed }

// NewKeys draws the seeds of a reading.
func NewKeys() Keys { return Keys{maphash.MakeSeed(), maphash.MakeSeed()} }

// Of is id's Key.
func (k Keys) Of(id string) Key { return Key{maphash.String(k.a, id), maphash.String(k.b, id)} }

// chat follows a Gemini chat: a first line {"sessionId", "startTime", ...}, message lines {"id", "type",
// "timestamp", "content"}, and {"$set": {...}} lines that replace fields, the whole "messages" list included.
// It holds what a listing needs of each message as it stands (its time, whether it counts, a user's words within
// maxPrompts), never the message itself, for MaxMessages messages at most.
type chat struct {
	keys    Keys
	order   []Key
	msgs    map[Key]summary
	prompts int // bytes of the prompts held
	id      string
}

// summary is what a listing needs of one message.
type summary struct {
	at     time.Time
	counts bool   // the user's or the model's words (not the context Gemini sends first)
	user   bool   // the user's
	prompt string // the user's words, up to maxPrompt; "" past maxPrompts
}

// message is a message's head: its lists are decoded one element at a time, from where they stand in the line.
type message struct {
	ID        string        `json:"id"`
	Type      string        `json:"type"`
	Timestamp time.Time     `json:"timestamp"`
	Content   agents.RawRef `json:"content"`
}

func (g *chat) reset() {
	g.order, g.msgs, g.prompts = nil, map[Key]summary{}, 0
}

func (g *chat) add(m message) {
	if len(m.ID) > MaxID {
		return
	}
	if g.msgs == nil {
		g.reset()
	}
	k := g.keys.Of(m.ID)
	old, ok := g.msgs[k]
	if !ok {
		if len(g.order) >= MaxMessages {
			return
		}
		g.order = append(g.order, k)
	}
	g.prompts -= len(old.prompt)
	s := summary{at: m.Timestamp}
	if m.Type == "user" || m.Type == "gemini" {
		t := text(m.Content, maxPrompt)
		s.counts = m.Type != "user" || !strings.HasPrefix(t, "<session_context>") // the context Gemini sends first, not the user's words
		s.user = s.counts && m.Type == "user"
		if s.user && g.prompts+len(t) <= maxPrompts {
			s.prompt = t
			g.prompts += len(t)
		}
	}
	g.msgs[k] = s
}

func (g *chat) line(c *agents.Conversation, line []byte) error {
	var e struct {
		message
		SessionID string `json:"sessionId"`
		StartTime time.Time
		Set       *struct {
			Messages agents.RawRef `json:"messages"`
		} `json:"$set"`
	}
	if err := json.Unmarshal(line, &e); err != nil {
		return err
	}
	switch {
	case e.SessionID != "":
		g.id = e.SessionID
		c.At(e.StartTime)
	case e.Set != nil && len(e.Set.Messages) > 0 && string(e.Set.Messages) != "null":
		if !agents.IsList(e.Set.Messages) {
			return errors.New("$set of messages that are not a list")
		}
		g.reset()
		return agents.EachElement(e.Set.Messages, func(b []byte) error {
			var m message
			if json.Unmarshal(b, &m) == nil {
				g.add(m)
			}
			return nil
		})
	case e.ID != "" && e.Type != "":
		g.add(e.message)
	}
	return nil
}

// read reads a chat into c: its messages as they stand at the end, and its id from the first line (the file name
// holds only its start).
func read(c *agents.Conversation, r io.Reader) {
	g := chat{keys: NewKeys()}
	c.Malformed, _ = agents.ScanLines(r, func(line []byte) error { return g.line(c, line) })
	if strings.HasPrefix(strings.ToLower(g.id), strings.ToLower(c.ID)) && layout.ValidateID(g.id) == nil {
		c.ID = g.id
	}
	for _, k := range g.order {
		s := g.msgs[k]
		c.At(s.at)
		if !s.counts {
			continue
		}
		c.Messages++
		if c.FirstPrompt == "" && s.user {
			c.FirstPrompt = s.prompt
		}
	}
}

// text is a message's text, up to limit bytes (< 0: all of it): content is a string or a list of parts, whose
// texts are joined by spaces.
func text(raw []byte, limit int) string {
	if agents.IsList(raw) {
		return agents.JoinTexts(raw, limit)
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return agents.Cut(s, limit)
}

var errEnough = errors.New("enough")

// line reads a chat line for watch: a message {"id", "type": "user"|"gemini", "content", "toolCalls"}.
func line(b []byte) (time.Time, string, []string, error) {
	var m struct {
		message
		ToolCalls agents.RawRef `json:"toolCalls"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.ID == "" {
		return time.Time{}, "", nil, err
	}
	role := map[string]string{"user": "user", "gemini": "assistant"}[m.Type]
	t := text(m.Content, -1)
	if role == "" || strings.HasPrefix(t, "<session_context>") {
		return m.Timestamp, "", nil, nil
	}
	parts := agents.Texts([]string{t})
	_ = agents.EachElement(m.ToolCalls, func(el []byte) error {
		if len(parts) >= agents.MaxWatchParts {
			return errEnough // watch shows no more of them
		}
		var c struct {
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		}
		_ = json.Unmarshal(el, &c)
		parts = append(parts, agents.Call(c.Name, c.Args))
		return nil
	})
	return m.Timestamp, role, parts, nil
}
