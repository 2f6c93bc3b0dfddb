package ui

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/agents/text"
	"github.com/sessionfs/sessionfs/layout"
)

// flushEvery is how many entries a conversation's page writes between two flushes: a 10 MB conversation starts
// showing at once and is never held whole in memory.
const flushEvery = 64

// convHead is a conversation page's head.
type convHead struct {
	Session, SessionHref, Agent, ID, First, Last, Events string
	Cwds                                                 []string
	Messages, Subagents                                  int
}

// convFoot is its end.
type convFoot struct {
	page
	Count int
	Err   string
	Live  bool
}

// entryView is one entry as the "entry" template shows it.
type entryView struct {
	N                                              int
	Kind, Label, Summary, Text, Time, TimeISO, Cwd string
	Folded                                         bool
}

var labels = map[text.Kind]string{text.Prompt: "prompt", text.Reply: "reply", text.ToolCall: "tool call",
	text.ToolResult: "tool result", text.Note: "note"}

// maxSummary is how much of a call or a result its folded line shows.
const maxSummary = 120

// entryRenderer numbers entries and remembers what the previous said (its cwd, its subagent), as the page shows
// only what changed; the page and the live events number them alike.
type entryRenderer struct {
	n        int
	cwd, sub string
}

func (er *entryRenderer) view(e text.Entry) entryView {
	er.n++
	v := entryView{N: er.n, Kind: e.Kind.String(), Label: labels[e.Kind], Text: e.Text, Time: when(e.Time), TimeISO: iso(e.Time)}
	if e.Time.IsZero() {
		v.Time = ""
	}
	if v.Label == "" {
		v.Label = v.Kind
	}
	if e.Cwd != "" && e.Cwd != er.cwd {
		v.Cwd, er.cwd = e.Cwd, e.Cwd
	}
	if e.Kind == text.ToolCall || e.Kind == text.ToolResult {
		v.Folded = true
		v.Summary = text.OneLine(e.Text, maxSummary)
		if e.Tool != "" && !strings.HasPrefix(e.Text, e.Tool) {
			v.Summary = text.OneLine(e.Tool, maxName) + ": " + v.Summary
		}
	}
	return v
}

// findConversation is conversation conv of agent name in the session open as sess.
func findConversation(sess *layout.Dir, name, conv string) (*agents.Agent, agents.Conversation, error) {
	if name == "" {
		return nil, agents.Conversation{}, fmt.Errorf("no agent named")
	}
	a, err := all.ByName(name)
	if err != nil {
		return nil, agents.Conversation{}, err
	}
	cs, err := a.Conversations(sess)
	if err != nil {
		return nil, agents.Conversation{}, err
	}
	for _, c := range cs {
		if c.ID == conv {
			return a, c, nil
		}
	}
	return nil, agents.Conversation{}, fmt.Errorf("session %s has no %s conversation %s", text.OneLine(sess.Name(), maxLine), name, text.OneLine(conv, maxName))
}

// conversation streams a conversation's page: its head at once, then its entries as agents/text reads them,
// flushed every flushEvery.
func (s *Server) conversation(w http.ResponseWriter, r *http.Request) {
	id, agent, conv := r.PathValue("id"), r.PathValue("agent"), r.PathValue("conv")
	if _, err := all.ByName(agent); err != nil || agent == "" {
		s.errorPage(w, http.StatusNotFound, "no agent is called "+text.OneLine(agent, maxName))
		return
	}
	sess := s.openSession(w, id)
	if sess == nil {
		return
	}
	defer sess.Close()
	// The page starts before the conversation is looked up: listing a session's conversations reads each
	// whole (a 10 MB one takes a while), and the page's head needs none of it.
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	bw := bufio.NewWriterSize(w, 32<<10)
	rc := http.NewResponseController(w)
	flush := func() error {
		if err := bw.Flush(); err != nil {
			return err
		}
		return rc.Flush()
	}
	if err := pages().ExecuteTemplate(bw, "head", page{Title: agent + " " + text.OneLine(conv, maxName)}); err != nil || flush() != nil {
		return
	}
	a, c, err := findConversation(sess, agent, conv)
	if err != nil {
		_ = pages().ExecuteTemplate(bw, "notfound", text.OneLine(err.Error(), maxLine))
		_ = flush()
		return
	}
	self := href("s", id, "c", a.Name, c.ID)
	head := convHead{Session: id, SessionHref: href("s", id), Agent: a.Name, ID: text.OneLine(c.ID, maxName),
		Messages: c.Messages, Subagents: c.Subagents, Events: self + "/events"}
	for _, cwd := range c.Cwds {
		head.Cwds = append(head.Cwds, text.OneLine(cwd, maxLine))
	}
	if !c.First.IsZero() {
		head.First, head.Last = when(c.First), when(c.Last)
	}
	if err := pages().ExecuteTemplate(bw, "convhead", head); err != nil {
		s.o.Log.Printf("ui: rendering a conversation's head: %v", err)
		return
	}
	if flush() != nil {
		return
	}
	var er entryRenderer
	err = text.Entries(sess, a, c, func(e text.Entry) error {
		if err := er.write(bw, e); err != nil {
			return err
		}
		if er.n%flushEvery == 0 {
			if err := flush(); err != nil {
				return err
			}
		}
		return r.Context().Err()
	})
	if r.Context().Err() != nil {
		return
	}
	er.closeSub(bw)
	foot := convFoot{Count: er.n, Live: true}
	if err != nil {
		foot.Err = "The rest could not be read: " + text.OneLine(err.Error(), maxLine)
	}
	if err := pages().ExecuteTemplate(bw, "convfoot", foot); err != nil {
		s.o.Log.Printf("ui: rendering a conversation's end: %v", err)
	}
	_ = flush()
}

// write writes entry e, opening or closing a subagent's section when it changes.
func (er *entryRenderer) write(w io.Writer, e text.Entry) error {
	if e.Subagent != er.sub {
		er.closeSub(w)
		if e.Subagent != "" {
			if err := pages().ExecuteTemplate(w, "subopen", e.Subagent); err != nil {
				return err
			}
		}
		er.sub = e.Subagent
	}
	return pages().ExecuteTemplate(w, "entry", er.view(e))
}

func (er *entryRenderer) closeSub(w io.Writer) {
	if er.sub != "" {
		io.WriteString(w, "</section>\n")
		er.sub = ""
	}
}

// followEntries calls fn for each entry of conversation c, then for each the agent appends, until ctx ends:
// agents/text's follower (inotify, and a poll for what it cannot see), read as its JSON lines.
func followEntries(ctx context.Context, sess *layout.Dir, a *agents.Agent, c agents.Conversation, fn func(text.Entry) error) error {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := text.Log(ctx, pw, sess, a, c, text.LogOptions{JSON: true, Follow: true})
		pw.CloseWithError(err)
		done <- err
	}()
	err := decodeEntries(pr, fn)
	pr.CloseWithError(io.ErrClosedPipe) // the follower's next write fails: it stops
	ferr := <-done
	if err == nil || err == io.EOF {
		err = ferr
	}
	return err
}
