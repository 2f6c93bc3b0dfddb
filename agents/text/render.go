package text

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// Location is the zone times are rendered in.
var Location = time.Local

// Render writes conversation c of agent a in the session open as sess as Markdown: a header (the agent, the
// session, the conversation's id, its cwds and times), then its prompts and replies as text, each tool call and
// its result one line, a subagent's entries quoted under its name. It streams: memory stays bounded whatever the
// conversation's size.
func Render(w io.Writer, sess *layout.Dir, a *agents.Agent, c agents.Conversation) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	p := NewPrinter(bw)
	p.Header(path.Base(sess.Name()), c)
	err := Entries(sess, a, c, p.Entry)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

// Printer writes entries as Render does, one after the other: it remembers what the previous one said (its day,
// its cwd, its subagent) to say only what changed.
type Printer struct {
	w        io.Writer
	day      string
	cwd      string
	subagent string
	err      error
}

// NewPrinter writes to w.
func NewPrinter(w io.Writer) *Printer { return &Printer{w: w} }

// Header writes the conversation's header: what it is, where and when it ran.
func (p *Printer) Header(session string, c agents.Conversation) {
	p.printf("# %s conversation %s\n\n", OneLine(c.Agent, MaxCall), OneLine(c.ID, MaxCall))
	p.printf("- Session: %s\n", OneLine(session, MaxCall))
	for i, cwd := range c.Cwds {
		label := "- Cwd: "
		if i > 0 {
			label = "- Also ran in: "
		}
		p.printf("%s%s\n", label, OneLine(cwd, 4096))
	}
	if len(c.Cwds) > 0 {
		p.cwd = c.Cwds[0]
	}
	if !c.First.IsZero() {
		p.printf("- Started: %s\n", stamp(c.First))
		p.printf("- Last: %s\n", stamp(c.Last))
	}
	p.printf("- Messages: %d", c.Messages)
	if c.Subagents > 0 {
		p.printf(", subagents: %d", c.Subagents)
	}
	p.printf("\n\n")
}

// Entry writes one entry (an Entries callback): it returns the writer's error.
func (p *Printer) Entry(e Entry) error {
	q := ""
	if e.Subagent != p.subagent {
		if e.Subagent != "" {
			p.printf("> ### Subagent %s\n>\n", OneLine(e.Subagent, MaxCall))
		} else {
			p.printf("\n")
		}
		p.subagent = e.Subagent
	}
	if e.Subagent != "" {
		q = "> "
	}
	if e.Cwd != "" && e.Cwd != p.cwd {
		p.printf("%s_cwd: %s_\n%s\n", q, OneLine(e.Cwd, 4096), strings.TrimSpace(q))
		p.cwd = e.Cwd
	}
	at := ""
	if !e.Time.IsZero() {
		at = " · " + p.when(e.Time)
	}
	switch e.Kind {
	case Prompt:
		p.printf("%s## User%s\n%s\n%s\n%s\n", q, at, strings.TrimSpace(q), quote(q, e.Text), strings.TrimSpace(q))
	case Reply:
		p.printf("%s## Assistant%s\n%s\n%s\n%s\n", q, at, strings.TrimSpace(q), quote(q, e.Text), strings.TrimSpace(q))
	case ToolCall:
		p.printf("%s- → %s\n", q, e.Text)
	case ToolResult:
		p.printf("%s  - ← %s\n", q, e.Text)
	default:
		p.printf("%s_%s_\n%s\n", q, quote(q, e.Text), strings.TrimSpace(q))
	}
	return p.err
}

// when is an entry's time: the date with the first of each day, the clock alone after it.
func (p *Printer) when(t time.Time) string {
	t = t.In(Location)
	if d := t.Format(time.DateOnly); d != p.day {
		p.day = d
		return stamp(t)
	}
	return t.Format(time.TimeOnly)
}

func (p *Printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func stamp(t time.Time) string { return t.In(Location).Format("2006-01-02 15:04:05 MST") }

// quote prefixes each line of s with q (a subagent's entries are quoted).
func quote(q, s string) string {
	s = strings.TrimSpace(s)
	if q == "" {
		return s
	}
	return q + strings.ReplaceAll(s, "\n", "\n"+q)
}
