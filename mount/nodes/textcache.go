package nodes

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/text"
	"github.com/sessionfs/sessionfs/layout"
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
	slots    *renderSlots            // the renderings being made, by session and uid
	pinned   int                     // bytes of the renderings open files keep
	pinnedBy map[string]int          // of them, by session
}

// inflight is a rendering being made; done is closed once r is.
type inflight struct {
	sig   string
	done  chan struct{}
	r     *rendering
	errno syscall.Errno // EIO: no slot was given in time (no rendering)
}

// textHandle is an open file of the text view: the rendering its reads go through while its conversation is as
// it was (r.sig), nil when none is kept.
type textHandle struct {
	mu      sync.Mutex
	r       *rendering
	session string // whose share of maxPinned r counts in
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
	used time.Time // guarded by the cache's mu

	// What the rendering grants (textperm.go): told at its first use, once its files were read, and again once
	// older than accessFresh (textFile.grants), so that a read does not list and stat every file it shows.
	accMu sync.Mutex
	acc   syscall.Stat_t
	accAt time.Time
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
	// maxRenders bounds the renderings made at once, uidRenders those one uid asked for (textslots.go: a uid's
	// renderings, however long, leave a slot to the others); sessionRenders (below) those of one session.
	// renderWait bounds a rendering's wait for a slot while none is given back: its readers then get EIO (not
	// EAGAIN, which a reader with a poller, Go's, waits on for good: the mount answers no poll), its attributes
	// the last rendering's size.
	// maxPinned bounds the renderings open files keep, sessionPinned those of one session's conversations (the
	// open files of one session's long renderings leave room for another's).
	maxRenders    = 4
	uidRenders    = 3
	renderWait    = 30 * time.Second
	maxPinned     = 128 << 20
	sessionPinned = maxPinned / 2
	// maxRenderRead bounds what one rendering reads of a conversation's files (every file counted, each once
	// however many names it has), what one read of a file takes (agents.MaxRead); maxRenderTime the time a
	// rendering takes (it is cut then, saying so).
	maxRenderRead = agents.MaxRead
	maxRenderTime = time.Minute
	// accessFresh is how long what a rendering grants is used again: a file's new mode or owner shows within it,
	// as a new conversation shows in a listing (listFresh), and within the kernel's keeping of attributes.
	accessFresh = listFresh
)

// sessionRenders bounds the renderings of one session made at once: half the slots, so that another session's
// rendering finds a slot however long one session's take (and as many as the daemon had in all before: a parallel
// grep of one session's conversations goes as fast), and half the cores, so that it finds a core too: a rendering
// is busy on one while it reads (on 2 cores, one session's two renderings of 64 MiB transcripts slowed another
// session's cat of its own 1.6-2.4x; with one, TestAttackRenderSlots).
var sessionRenders = min(max(runtime.NumCPU()/2, 1), maxRenders/2)

func newTextCache() *textCache {
	return &textCache{lists: map[string]*convList{}, renders: map[string]*rendering{},
		listing: map[string]*pendingList{}, inflight: map[string]*inflight{}, pinnedBy: map[string]int{},
		slots: newRenderSlots(maxRenders, sessionRenders, uidRenders)}
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

// callerUID is the uid of the FUSE request ctx carries (0: none known).
func callerUID(ctx context.Context) uint32 {
	if c, ok := fuse.FromContext(ctx); ok {
		return c.Uid
	}
	return 0
}

// readFor is conversation cv of agent a in session id rendered, for open file h (nil: none) and the caller of
// ctx: the rendering h keeps while cv is as it was, else the cache's, which h then keeps if all kept stay within
// maxPinned, and session id's within sessionPinned. EIO: no slot was free for the rendering within renderWait; EINTR: the caller was interrupted.
func (c *textCache) readFor(ctx context.Context, h *textHandle, t *Tree, id string, a *agents.Agent, cv agents.Conversation) (*rendering, syscall.Errno) {
	if h != nil {
		h.mu.Lock()
		r := h.r
		h.mu.Unlock()
		if r != nil && r.sig == signature(cv) {
			return r, 0
		}
	}
	r, errno := c.renderedFor(ctx, t, id, a, cv)
	if errno != 0 {
		return nil, errno
	}
	if h != nil {
		c.mu.Lock()
		h.mu.Lock()
		c.unpin(h)
		if c.pinned+len(r.data) <= maxPinned && c.pinnedBy[id]+len(r.data) <= sessionPinned {
			h.r, h.session = r, id
			c.pinned += len(r.data)
			c.pinnedBy[id] += len(r.data)
		}
		h.mu.Unlock()
		c.mu.Unlock()
	}
	return r, 0
}

// unpin forgets the rendering open file h kept. The caller holds c.mu and h.mu.
func (c *textCache) unpin(h *textHandle) {
	if h.r != nil {
		c.pinned -= len(h.r.data)
		if c.pinnedBy[h.session] -= len(h.r.data); c.pinnedBy[h.session] == 0 {
			delete(c.pinnedBy, h.session)
		}
		h.r = nil
	}
}

// release forgets the rendering open file h kept (it was closed).
func (c *textCache) release(h *textHandle) {
	c.mu.Lock()
	h.mu.Lock()
	c.unpin(h)
	h.mu.Unlock()
	c.mu.Unlock()
}

// renderingFor is what the text view shows as conversation cv's rendering in its attributes (the caller of ctx asks):
// the rendering, else (no slot in time, the caller interrupted) the last one made of it, else a note saying so.
func (c *textCache) renderingFor(ctx context.Context, t *Tree, id string, a *agents.Agent, cv agents.Conversation) *rendering {
	r, errno := c.renderedFor(ctx, t, id, a, cv)
	if errno == 0 {
		return r
	}
	c.mu.Lock()
	r = c.renders[id+"/"+a.Name+"/"+cv.ID]
	c.mu.Unlock()
	if r != nil {
		return r
	}
	return &rendering{data: busyNote(id, a, cv)}
}

// renderedFor is conversation cv of agent a in session id as Markdown, rendered again once it changed: once at a
// time for each conversation, in one of the slots the session's and the caller's shares allow (textslots.go).
// The caller waits for the rendering until it is interrupted (EINTR) or the rendering was given no slot within
// renderWait (EIO); a rendering under way goes on when its readers went (the next read finds it made).
func (c *textCache) renderedFor(ctx context.Context, t *Tree, id string, a *agents.Agent, cv agents.Conversation) (*rendering, syscall.Errno) {
	key := id + "/" + a.Name + "/" + cv.ID
	sig := signature(cv)
	c.mu.Lock()
	if r := c.renders[key]; r != nil && r.sig == sig {
		r.used = time.Now()
		c.mu.Unlock()
		return r, 0
	}
	f := c.inflight[key]
	if f == nil || f.sig != sig {
		f = &inflight{sig: sig, done: make(chan struct{})}
		c.inflight[key] = f
		go c.render(f, key, callerUID(ctx), t, id, a, cv)
	}
	c.mu.Unlock()
	select {
	case <-f.done:
		return f.r, f.errno
	case <-ctx.Done():
		return nil, syscall.EINTR
	}
}

// render makes rendering f of conversation cv (key in the cache) in a slot of session id's and uid's shares,
// and keeps it; none is made when no slot was given within renderWait (f.errno).
func (c *textCache) render(f *inflight, key string, uid uint32, t *Tree, id string, a *agents.Agent, cv agents.Conversation) {
	defer close(f.done)
	if !c.slots.acquire(context.Background(), id, uid, renderWait) {
		f.errno = syscall.EIO
		c.mu.Lock()
		if c.inflight[key] == f {
			delete(c.inflight, key)
		}
		c.mu.Unlock()
		return
	}
	r := &rendering{sig: f.sig, data: renderStable(t, id, a, cv)}
	c.slots.release(id, uid)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inflight[key] == f {
		delete(c.inflight, key)
	}
	if old := c.renders[key]; old != nil {
		c.bytes -= len(old.data)
	}
	r.used = time.Now()
	f.r, c.renders[key] = r, r
	c.bytes += len(r.data)
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
}

// header is the start of every rendering of conversation cv: what it is, and its first facts.
func header(w io.Writer, id string, a *agents.Agent, cv agents.Conversation) {
	fmt.Fprintf(w, "# %s conversation %s\n\n- Session: %s\n", text.OneLine(a.Name, 256), text.OneLine(cv.ID, 256), id)
	if !cv.First.IsZero() {
		fmt.Fprintf(w, "- Started: %s\n", cv.First.In(text.Location).Format("2006-01-02 15:04:05 MST"))
	}
	fmt.Fprintln(w)
}

// busyNote is what a reader is shown of conversation cv when its rendering had no slot in time.
func busyNote(id string, a *agents.Agent, cv agents.Conversation) []byte {
	var buf bytes.Buffer
	header(&buf, id, a, cv)
	fmt.Fprintf(&buf, "_Not rendered yet: the renderings of session %s take their share of the text view's and did not leave a slot within %v. Read it again in a moment; sessionfs log %s %s prints it._\n",
		id, renderWait, id, text.OneLine(cv.ID, 256))
	return buf.Bytes()
}

// renderStable renders a conversation as sessionfs log does, but for a header that only grows with the
// conversation's first facts (no counts, no last time): what the agent appends is appended to the rendering,
// so a reader following it (tail -f) reads on where it was. A conversation whose files hold more than
// maxRenderRead to read is not rendered (a note says so), and a rendering is cut past maxRendering bytes or
// maxRenderTime.
func renderStable(t *Tree, id string, a *agents.Agent, cv agents.Conversation) []byte {
	var buf bytes.Buffer
	w := &cutWriter{w: &buf, left: maxRendering, until: time.Now().Add(maxRenderTime)}
	header(w, id, a, cv)
	sess, err := t.sessions.Sub(id)
	if err != nil {
		return buf.Bytes()
	}
	defer sess.Close()
	if c := readCost(sess, a, cv); c.bytes > maxRenderRead {
		fmt.Fprintf(&buf, "_Not rendered: its files hold %d MiB to read (%d files, under %d names), more than the %d MiB one rendering of the text view reads. sessionfs log %s %s prints it._\n",
			c.bytes>>20, c.files, c.names, maxRenderRead>>20, id, text.OneLine(cv.ID, 256))
		return buf.Bytes()
	}
	_ = text.Entries(sess, a, cv, text.NewPrinter(w).Entry)
	switch {
	case w.late:
		fmt.Fprintf(&buf, "\n_The rest is cut here (its rendering took %v): sessionfs log %s %s prints it all._\n", maxRenderTime, id, text.OneLine(cv.ID, 256))
	case w.cut:
		fmt.Fprintf(&buf, "\n_The rest is cut here (%d MiB): sessionfs log %s %s prints it all._\n", maxRendering>>20, id, text.OneLine(cv.ID, 256))
	}
	return buf.Bytes()
}

// cost is what a rendering reads: bytes, in how many files under how many names.
type cost struct {
	bytes        int64
	files, names int
}

// readCost is what a rendering of conversation cv (of agent a, in the session open as sess) reads: the files
// text.Files names (its file and, for Claude, each subagent's transcript; opencode's log), each file once however
// many names it has (the reader reads a file of many names, hard links, once), each up to the agents.MaxRead one
// read of a file takes.
func readCost(sess *layout.Dir, a *agents.Agent, cv agents.Conversation) cost {
	names, err := text.Files(sess, a, cv)
	if err != nil {
		return cost{}
	}
	var c cost
	seen := map[[2]uint64]bool{}
	for _, n := range names {
		st, err := sess.Lstat(n)
		if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		c.names++
		if k := [2]uint64{st.Dev, st.Ino}; !seen[k] {
			seen[k] = true
			c.files++
			c.bytes += min(st.Size, agents.MaxRead)
		}
	}
	return c
}

// cutWriter writes up to left bytes, then stops with an error (which ends the rendering).
type cutWriter struct {
	w     io.Writer
	left  int
	cut   bool
	until time.Time // past it, the next write stops (late)
	late  bool
}

var errCut = fmt.Errorf("rendering cut")

func (c *cutWriter) Write(p []byte) (int, error) {
	if !c.until.IsZero() && time.Now().After(c.until) {
		c.late = true
		return 0, errCut
	}
	if len(p) > c.left {
		c.cut = true
		n, _ := c.w.Write(p[:c.left])
		c.left = 0
		return n, errCut
	}
	c.left -= len(p)
	return c.w.Write(p)
}
