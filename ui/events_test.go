package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sseEvent is one server-sent event.
type sseEvent struct{ name, id, data string }

// openEvents opens an event stream at path; events come on the channel until the test ends. The stream is open
// (its first bytes read) when it returns.
func (s *testServer) openEvents(t *testing.T, path string) <-chan sseEvent {
	t.Helper()
	// A bound on a hang, not on speed: the test fails instead of waiting forever.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", s.ts.URL+path, nil)
	resp, err := s.client.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("Content-Type"))
	r := bufio.NewReader(resp.Body)
	first, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "retry: 1000\n", first)
	out := make(chan sseEvent)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		var ev sseEvent
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "":
				if ev.name != "" {
					select {
					case out <- ev:
					case <-ctx.Done():
						return
					}
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.name = line[len("event: "):]
			case strings.HasPrefix(line, "id: "):
				ev.id = line[len("id: "):]
			case strings.HasPrefix(line, "data: "):
				ev.data += line[len("data: "):]
			}
		}
	}()
	return out
}

func TestConversationEventsSendAnAppendedEntry(t *testing.T) {
	st := newStore(t)
	dir := newSession(t, st, "live", nil)
	const conv = "11111111-0000-4000-8000-000000000001"
	p := transcript(t, dir, conv)
	appendFile(t, p, claudeLine(conv, "user", "first prompt", 1)+claudeLine(conv, "assistant", "first reply", 2))
	s := serve(t, st)
	page := "/s/live/c/claude/" + conv
	_, body := s.get(t, page)
	require.Equal(t, 2, entryCount(body))
	events := s.openEvents(t, page+"/events?after=2")
	appendFile(t, p, claudeLine(conv, "user", "a <b>new</b> prompt", 3))
	ev, ok := <-events
	require.True(t, ok, "the stream ended before the entry came")
	assert.Equal(t, "entry", ev.name)
	assert.Equal(t, "3", ev.id)
	var e liveEntry
	require.NoError(t, json.Unmarshal([]byte(ev.data), &e))
	assert.Equal(t, 3, e.N)
	assert.Contains(t, e.HTML, `id="e3"`)
	assert.Contains(t, e.HTML, "a &lt;b&gt;new&lt;/b&gt; prompt", "rendered escaped, as the page renders it")
	// And the page now has it where the event said.
	_, body = s.get(t, page)
	assert.Contains(t, body, `id="e3"`)
}

func TestConversationEventsResumeAfterTheLastSeen(t *testing.T) {
	st := newStore(t)
	dir := newSession(t, st, "live", nil)
	const conv = "11111111-0000-4000-8000-000000000002"
	p := transcript(t, dir, conv)
	for i := 1; i <= 5; i++ {
		appendFile(t, p, claudeLine(conv, "user", fmt.Sprintf("prompt %d", i), i))
	}
	s := serve(t, st)
	events := s.openEvents(t, "/s/live/c/claude/"+conv+"/events?after=3")
	for _, want := range []string{"4", "5"} {
		ev := <-events
		assert.Equal(t, want, ev.id, "what the page has not shown yet, from after=3")
	}
}

func TestStoreEventsSayANewSession(t *testing.T) {
	st := newStore(t)
	newSession(t, st, "one", nil)
	s := serve(t, st)
	events := s.openEvents(t, "/events")
	newSession(t, st, "two", nil)
	ev, ok := <-events
	require.True(t, ok)
	assert.Equal(t, "sessions", ev.name)
	// What the list's script fetches then: the rows, the new one among them.
	_, rows := s.get(t, "/?partial=rows")
	assert.True(t, strings.HasPrefix(rows, "<tbody>"), rows)
	assert.Contains(t, rows, `data-session="two"`)
}

func TestStoreEventsCatchUpWithWhatThePageShowed(t *testing.T) {
	st := newStore(t)
	newSession(t, st, "one", nil)
	s := serve(t, st)
	_, body := s.get(t, "/")
	live := regexp.MustCompile(`data-live="(/events\?stamp=[0-9a-f]+)"`).FindStringSubmatch(body)
	require.NotNil(t, live, "the list names its events with its stamp")
	newSession(t, st, "two", nil) // after the page, before its stream
	ev, ok := <-s.openEvents(t, live[1])
	require.True(t, ok)
	assert.Equal(t, "sessions", ev.name)
}
