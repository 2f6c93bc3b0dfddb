package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/sessionfs/sessionfs/agents/text"
)

// Server-sent events: a conversation's appended entries, and the store's sessions and runs as they change.

// heartbeat keeps an idle stream open through proxies and finds a closed one.
const heartbeat = 15 * time.Second

// storePoll is how often /events looks at the store: the sessions folder and the runs' leases.
var storePoll = 500 * time.Millisecond

// sse starts an event stream; it returns false (having answered) when the connection cannot stream.
func sse(w http.ResponseWriter) (send func(event, id string, data []byte) error, ok bool) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := io.WriteString(w, "retry: 1000\n\n"); err != nil || rc.Flush() != nil {
		return nil, false
	}
	return func(event, id string, data []byte) error {
		var b bytes.Buffer
		if event != "" {
			fmt.Fprintf(&b, "event: %s\n", event)
		}
		if id != "" {
			fmt.Fprintf(&b, "id: %s\n", id)
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			fmt.Fprintf(&b, "data: %s\n", line)
		}
		b.WriteByte('\n')
		if _, err := w.Write(b.Bytes()); err != nil {
			return err
		}
		return rc.Flush()
	}, true
}

// decodeEntries reads agents/text's JSON lines from r, calling fn for each entry.
func decodeEntries(r io.Reader, fn func(text.Entry) error) error {
	dec := json.NewDecoder(r)
	for {
		var e text.Entry
		if err := dec.Decode(&e); err != nil {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
	}
}

// liveEntry is an "entry" event's data.
type liveEntry struct {
	N    int    `json:"n"`
	Sub  string `json:"sub"`
	HTML string `json:"html"`
}

// conversationEvents sends each entry of a conversation past ?after=N (or the Last-Event-ID of a reconnection)
// as it is appended, rendered as the page renders it.
func (s *Server) conversationEvents(w http.ResponseWriter, r *http.Request) {
	id, agent, conv := r.PathValue("id"), r.PathValue("agent"), r.PathValue("conv")
	after, _ := strconv.Atoi(r.URL.Query().Get("after"))
	if last, err := strconv.Atoi(r.Header.Get("Last-Event-ID")); err == nil && last > after {
		after = last
	}
	sess := s.openSession(w, id)
	if sess == nil {
		return
	}
	defer sess.Close()
	a, c, err := findConversation(sess, agent, conv)
	if err != nil {
		s.errorPage(w, http.StatusNotFound, err.Error())
		return
	}
	send, ok := sse(w)
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	entries := make(chan liveEntry)
	go func() {
		defer close(entries)
		var er entryRenderer
		_ = followEntries(ctx, sess, a, c, func(e text.Entry) error {
			v := er.view(e)
			if v.N <= after {
				return nil
			}
			var b bytes.Buffer
			if err := pages().ExecuteTemplate(&b, "entry", v); err != nil {
				return err
			}
			select {
			case entries <- liveEntry{N: v.N, Sub: e.Subagent, HTML: b.String()}:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	defer func() {
		cancel()            // a write that failed ends the follower too, not only a closed connection
		for range entries { // wait for it: the session's folder is closed after
		}
	}()
	for {
		select {
		case e, open := <-entries:
			if !open {
				return
			}
			data, _ := json.Marshal(e)
			if send("entry", strconv.Itoa(e.N), data) != nil {
				return
			}
		case <-beat.C:
			if _, err := io.WriteString(w, ": beat\n\n"); err != nil || http.NewResponseController(w).Flush() != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// storeEvents sends "sessions" each time a session appears or goes, or a run starts or ends (its lease is taken
// or released): the list's script fetches its rows again.
func (s *Server) storeEvents(w http.ResponseWriter, r *http.Request) {
	send, ok := sse(w)
	if !ok {
		return
	}
	ctx := r.Context()
	last := s.storeStamp()
	// The page says what it showed: what changed between its rendering and this stream is sent at once.
	if seen := r.URL.Query().Get("stamp"); seen != "" && seen != strconv.FormatUint(last, 16) {
		if send("sessions", "", []byte(strconv.FormatUint(last, 16))) != nil {
			return
		}
	}
	tick := time.NewTicker(storePoll)
	defer tick.Stop()
	quiet := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := s.storeStamp()
		if now != last {
			last, quiet = now, 0
			if send("sessions", "", []byte(strconv.FormatUint(now, 16))) != nil {
				return
			}
			continue
		}
		if quiet++; time.Duration(quiet)*storePoll >= heartbeat {
			quiet = 0
			if _, err := io.WriteString(w, ": beat\n\n"); err != nil || http.NewResponseController(w).Flush() != nil {
				return
			}
		}
	}
}

// storeStamp changes when a session is made, renamed or removed, or a lease is taken or released: a hash of the
// sessions folder's names and of the leases' sizes and times.
func (s *Server) storeStamp() uint64 {
	h := fnv.New64a()
	if sessions, err := s.o.Store.Sessions(); err == nil {
		if ents, err := sessions.ReadDir("."); err == nil {
			for _, e := range ents {
				io.WriteString(h, e.Name())
				h.Write([]byte{0})
			}
		}
	}
	// The locks folder is the store's (outside sessions/), not a session's.
	ents, err := os.ReadDir(s.o.Store.LocksDir())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return h.Sum64()
	}
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			fmt.Fprintf(h, "%s %d %d\n", e.Name(), fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return h.Sum64()
}
