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
//
// Readers at once (a parallel grep, rg) must neither hold a rendering each nor make each other's go: a
// conversation is rendered once at a time however many read it (inflight), at most maxRenders at once (each holds
// up to maxRendering while it is made), and an open file keeps the rendering it reads (textHandle) while all such
// stay within maxPinned. Without, 48 readers of 48 renderings evicted each other's from the cache between two
// reads of 128 KiB and each read rendered its conversation again: none ended in ten minutes.
type textCache struct {
	mu       sync.Mutex
	lists    map[string]*convList  // <session>/<agent> -> its conversations
	renders  map[string]*rendering // <session>/<agent>/<conversation> -> its Markdown
	bytes    int
	listing  map[string]*pendingList // lists being made
	inflight map[string]*inflight    // renderings being made
	slots    chan struct{}           // one per rendering being made
	pinned   int                     // bytes of the renderings open files keep
}

// inflight is a rendering being made; done is closed once data is.
type inflight struct {
	sig  string
	done chan struct{}
	data []byte
}

// textHandle is an open file of the text view: the rendering its reads go through while its conversation is as
// it was (sig), nil when none is kept.
type textHandle struct {
	mu   sync.Mutex
	sig  string
	data []byte
}

type convList struct {
	at    time.Time
	fresh time.Duration // how long it is used again: listFresh, or longer for a list long to make
	convs []agents.Conversation
}

// pendingList is a listing being made; done is closed once convs is.
type pendingList struct {
	done  chan struct{}
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
	// listShare: a list that took d to make is used again for listShare*d at least, so a session whose
	// conversations are long to read (thousands, or a few of hundreds of MiB) takes a quarter of a core at most
	// however many read the view. A list is made once at a time; readers meanwhile get the last one.
	listShare = 4
	// maxTextBytes bounds the renderings kept; maxRendering one rendering (a longer one is cut, saying so).
	maxTextBytes = 64 << 20
	maxRendering = 16 << 20
	maxLists     = 4096
	// maxRenders bounds the renderings made at once; maxPinned the renderings open files keep.
	maxRenders = 2
	maxPinned  = 128 << 20
)

func newTextCache() *textCache {
	return &textCache{lists: map[string]*convList{}, renders: map[string]*rendering{},
		listing: map[string]*pendingList{}, inflight: map[string]*inflight{}, slots: make(chan struct{}, maxRenders)}
}

// conversations lists agent a's conversations in session id (none if the session cannot be read).
func (c *textCache) conversations(t *Tree, id string, a *agents.Agent) []agents.Conversation {
	key := id + "/" + a.Name
	c.mu.Lock()
	l := c.lists[key]
	if l != nil && time.Since(l.at) < l.fresh {
		c.mu.Unlock()
		return l.convs
	}
	if p := c.listing[key]; p != nil {
		c.mu.Unlock()
		if l != nil {
			return l.convs // being made again: the last one meanwhile
		}
		<-p.done
		return p.convs
	}
	p := &pendingList{done: make(chan struct{})}
	c.listing[key] = p
	c.mu.Unlock()
	defer close(p.done)

	start := time.Now()
	if sess, err := t.sessions.Sub(id); err == nil {
		p.convs, _ = a.Conversations(sess)
		_ = sess.Close()
	}
	fresh := max(listFresh, listShare*time.Since(start))
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.listing, key)
	if len(c.lists) >= maxLists {
		for k, l := range c.lists {
			if time.Since(l.at) >= l.fresh {
				delete(c.lists, k)
			}
		}
	}
	c.lists[key] = &convList{at: time.Now(), fresh: fresh, convs: p.convs}
	return p.convs
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

// signature is what conversation cv is now, as far as its rendering goes.
func signature(cv agents.Conversation) string {
	return fmt.Sprint(cv.Size, cv.Last.UnixNano(), cv.Messages, cv.Subagents, cv.Malformed)
}

// read is conversation cv of agent a in session id as Markdown, for open file h (nil: none): the rendering h
// keeps while cv is as it was, else the cache's, which h then keeps if all kept stay within maxPinned.
func (c *textCache) read(h *textHandle, t *Tree, id string, a *agents.Agent, cv agents.Conversation) []byte {
	sig := signature(cv)
	if h != nil {
		h.mu.Lock()
		data, same := h.data, h.sig == sig
		h.mu.Unlock()
		if data != nil && same {
			return data
		}
	}
	data := c.rendered(t, id, a, cv)
	if h != nil {
		c.mu.Lock()
		h.mu.Lock()
		c.pinned -= len(h.data)
		h.data, h.sig = nil, ""
		if c.pinned+len(data) <= maxPinned {
			h.data, h.sig = data, sig
			c.pinned += len(data)
		}
		h.mu.Unlock()
		c.mu.Unlock()
	}
	return data
}

// release forgets the rendering open file h kept (it was closed).
func (c *textCache) release(h *textHandle) {
	c.mu.Lock()
	h.mu.Lock()
	c.pinned -= len(h.data)
	h.data, h.sig = nil, ""
	h.mu.Unlock()
	c.mu.Unlock()
}

// rendered is conversation cv of agent a in session id as Markdown, rendered again once it changed: once at a
// time for each conversation, maxRenders at once in all.
func (c *textCache) rendered(t *Tree, id string, a *agents.Agent, cv agents.Conversation) []byte {
	key := id + "/" + a.Name + "/" + cv.ID
	sig := signature(cv)
	c.mu.Lock()
	if r := c.renders[key]; r != nil && r.sig == sig {
		r.used = time.Now()
		c.mu.Unlock()
		return r.data
	}
	if f := c.inflight[key]; f != nil && f.sig == sig {
		c.mu.Unlock()
		<-f.done
		return f.data
	}
	f := &inflight{sig: sig, done: make(chan struct{})}
	c.inflight[key] = f
	c.mu.Unlock()

	c.slots <- struct{}{}
	f.data = renderStable(t, id, a, cv)
	<-c.slots
	defer close(f.done)
	data := f.data
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inflight[key] == f {
		delete(c.inflight, key)
	}
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
