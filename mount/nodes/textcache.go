package nodes

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/text"
)

// textCache holds the text view's listings and renderings: a listing for listFresh, a rendering until its
// conversation changes, the renderings within maxTextBytes in all (the least recently read go first).
type textCache struct {
	mu      sync.Mutex
	lists   map[string]*convList  // <session>/<agent> -> its conversations
	renders map[string]*rendering // <session>/<agent>/<conversation> -> its Markdown
	bytes   int
}

type convList struct {
	at    time.Time
	convs []agents.Conversation
}

type rendering struct {
	sig  string // what the conversation was when rendered (size, last time, messages)
	data []byte
	used time.Time
}

const (
	// listFresh is how long a session's list of an agent's conversations is used again: readers of the view (a
	// tail -f asks every second) cost one reading of the agent's files per listFresh.
	listFresh = 250 * time.Millisecond
	// maxTextBytes bounds the renderings kept; maxRendering one rendering (a longer one is cut, saying so).
	maxTextBytes = 64 << 20
	maxRendering = 16 << 20
	maxLists     = 4096
)

func newTextCache() *textCache {
	return &textCache{lists: map[string]*convList{}, renders: map[string]*rendering{}}
}

// conversations lists agent a's conversations in session id (none if the session cannot be read).
func (c *textCache) conversations(t *Tree, id string, a *agents.Agent) []agents.Conversation {
	key := id + "/" + a.Name
	c.mu.Lock()
	l := c.lists[key]
	c.mu.Unlock()
	if l != nil && time.Since(l.at) < listFresh {
		return l.convs
	}
	var convs []agents.Conversation
	if sess, err := t.sessions.Sub(id); err == nil {
		convs, _ = a.Conversations(sess)
		_ = sess.Close()
	}
	c.mu.Lock()
	if len(c.lists) >= maxLists {
		for k, l := range c.lists {
			if time.Since(l.at) >= listFresh {
				delete(c.lists, k)
			}
		}
	}
	c.lists[key] = &convList{at: time.Now(), convs: convs}
	c.mu.Unlock()
	return convs
}

// conversation is agent a's conversation conv in session id.
func (c *textCache) conversation(t *Tree, id string, a *agents.Agent, conv string) (agents.Conversation, bool) {
	for _, cv := range c.conversations(t, id, a) {
		if cv.ID == conv {
			return cv, true
		}
	}
	return agents.Conversation{}, false
}

// rendered is conversation cv of agent a in session id as Markdown, rendered again once it changed.
func (c *textCache) rendered(t *Tree, id string, a *agents.Agent, cv agents.Conversation) []byte {
	key := id + "/" + a.Name + "/" + cv.ID
	sig := fmt.Sprint(cv.Size, cv.Last.UnixNano(), cv.Messages, cv.Subagents, cv.Malformed)
	c.mu.Lock()
	if r := c.renders[key]; r != nil && r.sig == sig {
		r.used = time.Now()
		c.mu.Unlock()
		return r.data
	}
	c.mu.Unlock()

	data := renderStable(t, id, a, cv)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.renders[key]; old != nil {
		c.bytes -= len(old.data)
	}
	c.renders[key] = &rendering{sig: sig, data: data, used: time.Now()}
	c.bytes += len(data)
	for c.bytes > maxTextBytes && len(c.renders) > 1 {
		oldest := ""
		for k, r := range c.renders {
			if k != key && (oldest == "" || r.used.Before(c.renders[oldest].used)) {
				oldest = k
			}
		}
		c.bytes -= len(c.renders[oldest].data)
		delete(c.renders, oldest)
	}
	return data
}

// renderStable renders a conversation as sessionfs log does, but for a header that only grows with the
// conversation's first facts (no counts, no last time): what the agent appends is appended to the rendering,
// so a reader following it (tail -f) reads on where it was.
func renderStable(t *Tree, id string, a *agents.Agent, cv agents.Conversation) []byte {
	var buf bytes.Buffer
	w := &cutWriter{w: &buf, left: maxRendering}
	fmt.Fprintf(w, "# %s conversation %s\n\n- Session: %s\n", text.OneLine(a.Name, 256), text.OneLine(cv.ID, 256), id)
	if !cv.First.IsZero() {
		fmt.Fprintf(w, "- Started: %s\n", cv.First.In(text.Location).Format("2006-01-02 15:04:05 MST"))
	}
	fmt.Fprintln(w)
	sess, err := t.sessions.Sub(id)
	if err == nil {
		err = text.Entries(sess, a, cv, text.NewPrinter(w).Entry)
		_ = sess.Close()
	}
	if w.cut {
		fmt.Fprintf(&buf, "\n_The rest is cut here (%d MiB): sessionfs log %s %s prints it all._\n", maxRendering>>20, id, text.OneLine(cv.ID, 256))
	}
	return buf.Bytes()
}

// cutWriter writes up to left bytes, then stops with an error (which ends the rendering).
type cutWriter struct {
	w    io.Writer
	left int
	cut  bool
}

var errCut = fmt.Errorf("rendering cut")

func (c *cutWriter) Write(p []byte) (int, error) {
	if len(p) > c.left {
		c.cut = true
		n, _ := c.w.Write(p[:c.left])
		c.left = 0
		return n, errCut
	}
	c.left -= len(p)
	return c.w.Write(p)
}
