package text

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/gemini"
	"github.com/sessionfs/sessionfs/agents/qwen"
	"github.com/sessionfs/sessionfs/layout"
)

// geminiChat writes a Gemini chat of body's lines into a new session.
func geminiChat(t *testing.T, write func(w *bufio.Writer)) (*layout.Dir, agents.Conversation) {
	t.Helper()
	sess, root := openSession(t)
	p := filepath.Join(root, ".gemini/tmp/w/chats/session-2026-12-01T00-00-9ab916a9.jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	f, err := os.Create(p)
	require.NoError(t, err)
	w := bufio.NewWriterSize(f, 1<<20)
	write(w)
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
	return sess, only(t, sess, gemini.Agent)
}

// tinyCalls writes a message line of about size bytes holding nothing but tiny tool calls, and returns how many.
func tinyCalls(w *bufio.Writer, id string, size int) int {
	const call = `{"name":"t","args":{"a":1},"status":"success"}`
	head := fmt.Sprintf(`{"id":%q,"timestamp":"2026-12-01T00:00:01Z","type":"gemini","content":"calls","toolCalls":[`, id)
	w.WriteString(head)
	n, calls := len(head), 0
	for ; n+len(call)+4 < size; calls++ {
		if calls > 0 {
			w.WriteByte(',')
			n++
		}
		w.WriteString(call)
		n += len(call)
	}
	w.WriteString("]}\n")
	return calls
}

// peakHeap runs f and returns the most its heap's objects took meanwhile (sampled every millisecond), above what
// they took before.
func peakHeap(f func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	base := read()
	var mu sync.Mutex
	peak := base
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			v := read()
			mu.Lock()
			peak = max(peak, v)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	return max(peak, read()) - base
}

// Issue 49, finding 2: a chat of 4 message lines of 4 MiB, 350,000 tiny tool calls. The reader held every
// message's entries until the end of the file: 27 bytes of memory for each byte read (16 MiB: 430 MiB and more).
// It holds where each message stands, and passes the entries on: a few lines' worth, and no more entries than
// maxGeminiEntries, the rest said to be left out.
func TestGeminiChatOfTinyCallsInBoundedMemory(t *testing.T) {
	calls := 0
	sess, c := geminiChat(t, func(w *bufio.Writer) {
		fmt.Fprintln(w, `{"sessionId":"9ab916a9-2021-45fc-83cd-518e4cf981a0","startTime":"2026-12-01T00:00:00Z"}`)
		fmt.Fprintln(w, `{"id":"p","timestamp":"2026-12-01T00:00:00Z","type":"user","content":[{"text":"the word is marmalade"}]}`)
		for i := range 4 {
			calls += tinyCalls(w, fmt.Sprint("m", i), 4<<20)
		}
	})
	const bound = 64 << 20
	var out tailOf
	peak := peakHeap(func() { require.NoError(t, Render(&out, sess, gemini.Agent, c)) })
	t.Logf("%d tool calls in 16 MiB: %d MiB of rendering, the heap's peak %d MiB above where it was (bound %d MiB); it ends %q",
		calls, out.n>>20, peak>>20, bound>>20, out.tail[max(0, len(out.tail)-100):])
	assert.Contains(t, out.head, "marmalade")
	assert.Contains(t, out.tail, "left out")
	assert.Less(t, peak, uint64(bound))
}

// tailOf is a writer that keeps the first and last KiB of what it is given.
type tailOf struct {
	n          int
	head, tail string
}

func (w *tailOf) Write(p []byte) (int, error) {
	if w.head == "" {
		w.head = string(p[:min(len(p), 1024)])
	}
	w.n += len(p)
	w.tail = (w.tail + string(p[max(0, len(p)-1024):]))
	w.tail = w.tail[max(0, len(w.tail)-1024):]
	return len(p), nil
}

var _ io.Writer = (*tailOf)(nil)

// The chat is what stands at the end of the file, read again from where each message's last version is: in the
// order the messages first came (since the last $set of the list), each as it was last written.
func TestGeminiChatReadAgainFromWhereEachMessageStands(t *testing.T) {
	sess, c := geminiChat(t, func(w *bufio.Writer) {
		fmt.Fprintln(w, `{"id":"gone","type":"user","content":"before the $set"}`)
		// a $set whose list names b twice (its last is kept) and a message of no id (left out)
		fmt.Fprintln(w, `{"$set":{"messages":[{"id":"a","type":"user","content":"a1"},{"id":"b","type":"user","content":"b1"},{"type":"user","content":"no id"},{"id":"c","type":"gemini","content":[{"text":"c1"}]},{"id":"b","type":"user","content":"b2"}]}}`)
		fmt.Fprintln(w, `{"$set":{"lastUpdated":"2026-12-01T00:00:00Z"}}`)
		fmt.Fprintln(w, `{"id":"a","type":"user","content":"a2 \u001b[2J"}`)
		fmt.Fprintln(w, `{"id":"d","type":"gemini","content":"d1","toolCalls":[{"name":"ls","args":{"path":"/w"},"status":"success","resultDisplay":"x\ny"}]}`)
		fmt.Fprintln(w, `not json`)
		fmt.Fprint(w, `{"id":"e","type":"info","content":"torn, last"}`)
	})
	assert.Equal(t, []string{`prompt::a2 \x1b[2J`, "prompt::b2", "reply::c1", "reply::d1", "tool_call:ls:ls(/w)",
		"tool_result:ls:2 lines: x", "note::info: torn, last"}, said(entries(t, sess, gemini.Agent, c)))
}

// Past maxGeminiEntries entries the chat is cut with a Note; a follower reading it again gets what it had not.
func TestGeminiChatEntriesAreBounded(t *testing.T) {
	defer func(n int) { maxGeminiEntries = n }(maxGeminiEntries)
	maxGeminiEntries = 10
	sess, c := geminiChat(t, func(w *bufio.Writer) {
		tinyCalls(w, "m0", 1<<10)
		fmt.Fprintln(w, `{"id":"m1","type":"user","content":"never reached"}`)
	})
	r := geminiReader{}
	var got []Entry
	at, err := r.read(sess, c, position{}, func(e Entry) error { got = append(got, e); return nil })
	require.NoError(t, err)
	require.Len(t, got, maxGeminiEntries+1)
	assert.Equal(t, "(the rest of the chat left out: more than the 10 entries read)", got[maxGeminiEntries].Text)
	assert.NotContains(t, said(got), "prompt::never reached")
	again := 0
	_, err = r.read(sess, c, at, func(Entry) error { again++; return nil })
	require.NoError(t, err)
	assert.Zero(t, again, "a follower is given nothing twice")
}

// A listing holds what it needs of each message, not the message: the first prompt (cut at a title's bound), the
// count and the times, for a chat of a million tiny tool calls as for any.
func TestGeminiListingOfTinyCalls(t *testing.T) {
	long := strings.Repeat("é", 10<<10) // 20 KiB
	var c agents.Conversation
	peak := peakHeap(func() {
		_, c = geminiChat(t, func(w *bufio.Writer) {
			fmt.Fprintln(w, `{"sessionId":"9ab916a9-2021-45fc-83cd-518e4cf981a0","startTime":"2026-12-01T00:00:00Z"}`)
			fmt.Fprintf(w, `{"id":"p","timestamp":"2026-12-01T00:00:01Z","type":"user","content":[{"text":"<session_context>"}]}`+"\n")
			fmt.Fprintf(w, `{"id":"q","timestamp":"2026-12-01T00:00:02Z","type":"user","content":[{"text":"%s"},{"text":"x"}]}`+"\n", long)
			tinyCalls(w, "m0", 8<<20)
		})
	})
	t.Logf("the listing's heap peak: %d MiB", peak>>20)
	assert.Equal(t, 2, c.Messages)
	assert.Equal(t, long[:16<<10], c.FirstPrompt, "a title, cut where a character ends")
	assert.Equal(t, "9ab916a9-2021-45fc-83cd-518e4cf981a0", c.ID)
	assert.Less(t, peak, uint64(64<<20))
}

// Qwen's chats have the same shape: a line of 8 MiB holding 600,000 tiny parts is read one part at a time (the
// line decoded at once took 94 MiB of heap, one part at a time 46 MiB: the line and its buffers).
func TestQwenLineOfTinyPartsInBoundedMemory(t *testing.T) {
	sess, root := openSession(t)
	p := filepath.Join(root, ".qwen/projects/-w/chats/6ff0322b-05c7-4854-be6e-8e9ae644122e.jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	var b strings.Builder
	b.WriteString(`{"type":"assistant","timestamp":"2026-12-01T00:00:00Z","cwd":"/w","message":{"role":"model","parts":[{"text":"first"}`)
	for b.Len() < 8<<20 {
		b.WriteString(`,{"text":" "}`)
	}
	b.WriteString(`,{"functionCall":{"name":"ls","args":{"path":"/w"}}}]}}` + "\n")
	require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o600))
	b.Reset()
	c := only(t, sess, qwen.Agent)
	var got []string
	peak := peakHeap(func() {
		require.NoError(t, Entries(sess, qwen.Agent, c, func(e Entry) error { got = append(got, e.Text); return nil }))
	})
	t.Logf("the heap's peak: %d MiB", peak>>20)
	assert.Equal(t, []string{"first", "ls(/w)"}, got)
	assert.Less(t, peak, uint64(64<<20), "94 MiB before: the parts as one Go slice")
}
