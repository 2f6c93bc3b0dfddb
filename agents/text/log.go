package text

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// ErrNoConversation is returned by Pick when the session holds no conversation that fits.
var ErrNoConversation = errors.New("no such conversation")

// Pick finds in the session open as sess the conversation of one of among whose id is id or starts with it (an
// opencode id without its "ses_" too), or with id "" the latest conversation. It returns its agent too.
func Pick(sess *layout.Dir, among []*agents.Agent, id string) (*agents.Agent, agents.Conversation, error) {
	var found []agents.Conversation
	var of []*agents.Agent
	for _, a := range among {
		cs, err := a.Conversations(sess)
		if err != nil {
			return nil, agents.Conversation{}, err
		}
		for _, c := range cs {
			lc, lid := strings.ToLower(c.ID), strings.ToLower(id)
			switch {
			case id == "" || lc == lid:
			case strings.HasPrefix(lc, lid) || a.IDPrefix != "" && strings.HasPrefix(lc, strings.ToLower(a.IDPrefix)+lid):
			default:
				continue
			}
			if lc == lid && id != "" {
				return a, c, nil
			}
			found, of = append(found, c), append(of, a)
		}
	}
	of1 := ""
	if len(among) == 1 {
		of1 = among[0].Name + " "
	}
	switch {
	case len(found) == 0 && id == "":
		return nil, agents.Conversation{}, fmt.Errorf("%w: session %s has no %sconversation yet", ErrNoConversation, path.Base(sess.Name()), of1)
	case len(found) == 0:
		return nil, agents.Conversation{}, fmt.Errorf("%w: session %s has no %sconversation %s", ErrNoConversation, path.Base(sess.Name()), of1, id)
	case id != "" && len(found) > 1:
		var ids []string
		for _, c := range found {
			ids = append(ids, c.ID)
		}
		return nil, agents.Conversation{}, fmt.Errorf("%q is the start of %d conversations: %s; type more of the id", id, len(found), strings.Join(ids, ", "))
	}
	latest := 0
	for i, c := range found {
		if c.Last.After(found[latest].Last) {
			latest = i
		}
	}
	return of[latest], found[latest], nil
}

// LogOptions say how Log prints.
type LogOptions struct {
	JSON   bool // one Entry a line, as JSON, instead of Markdown
	Follow bool // then print what the agent adds, until ctx ends
}

// pollEvery is how often a follower reads again when no change was signalled: an inotify watch sees no write
// made through a bind or another host, and a folder made later (a first subagent) is not watched yet.
var pollEvery = time.Second

// Log writes conversation c of agent a in the session open as sess to w as Render does (or its entries as JSON
// lines); with Follow it goes on printing what the agent adds, as tail -f, until ctx ends. Following, a last line
// the agent has not finished writing is printed once it has (opencode: a reply once complete).
func Log(ctx context.Context, w io.Writer, sess *layout.Dir, a *agents.Agent, c agents.Conversation, o LogOptions) error {
	r, err := readerOf(a)
	if err != nil {
		return err
	}
	rel, err := relOf(sess, c)
	if err != nil {
		return err
	}
	out := bufio.NewWriterSize(w, 64<<10)
	var fn func(Entry) error
	if o.JSON {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		fn = func(e Entry) error { return enc.Encode(e) }
	} else {
		p := NewPrinter(out)
		p.Header(path.Base(sess.Name()), c)
		fn = p.Entry
	}
	if !o.Follow {
		_, err = r.read(sess, c, position{}, fn)
		if ferr := out.Flush(); err == nil {
			err = ferr
		}
		return err
	}
	// Watched before the first read: what is written while it reads wakes the loop.
	watch, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer watch.Close()
	// The folders whose changes bring entries: the file's, and (Claude) its subagents'. Each is watched through
	// its descriptor, opened beneath the session: no name of the session's is resolved in the host's namespace.
	dirs := []string{path.Dir(rel), path.Join(path.Dir(rel), c.ID, "subagents")}
	watched := map[string]*layout.Dir{}
	defer func() {
		for _, d := range watched {
			d.Close()
		}
	}()
	watchDirs := func() {
		for _, rel := range dirs {
			if watched[rel] == nil {
				if d, err := watchBeneath(watch, sess, rel); err == nil {
					watched[rel] = d
				}
			}
		}
	}
	watchDirs()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	stamp := stampOf(sess, rel)
	pos, err := r.read(sess, c, position{subs: map[string]int64{}}, fn)
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-watch.Errors:
			return err
		case <-watch.Events:
		case <-tick.C:
		}
		watchDirs() // a folder made since (a first subagent's)
		if _, again := r.(lineReader); !again {
			if _, again = r.(claudeReader); !again {
				// Gemini and opencode are read whole: only when their files changed.
				now := stampOf(sess, rel)
				if now == stamp {
					continue
				}
				stamp = now
			}
		}
		pos, err = r.read(sess, c, pos, fn)
		if ferr := out.Flush(); err == nil {
			err = ferr
		}
		if err != nil {
			return err
		}
	}
}

// watchBeneath watches folder rel of sess through a descriptor of it, which it returns: kept open while watched,
// so that the next folder's descriptor (and the name fsnotify keeps the watch by) is another.
func watchBeneath(w *fsnotify.Watcher, sess *layout.Dir, rel string) (*layout.Dir, error) {
	d, err := sess.Sub(rel)
	if err != nil {
		return nil, err
	}
	if err := w.Add(fmt.Sprintf("/proc/self/fd/%d", d.Fd())); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// stampOf tells a change of file rel (or of its SQLite log beside it).
func stampOf(sess *layout.Dir, rel string) [4]int64 {
	var s [4]int64
	if st, err := sess.Lstat(rel); err == nil {
		s[0], s[1] = st.Size, st.Mtim.Nano()
	}
	if st, err := sess.Lstat(rel + "-wal"); err == nil {
		s[2], s[3] = st.Size, st.Mtim.Nano()
	}
	return s
}
