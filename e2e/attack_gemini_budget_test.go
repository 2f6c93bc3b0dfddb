package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Gemini chat of issue 49's finding 2: what an agent writes as its own chat file. A first prompt, then message
// lines each just under the text reader's line bound (16 MiB) holding nothing but tiny tool calls: 4 lines are
// 64 MiB and 1.4 million calls. Before its budget, the reader held every entry of every message until the end of
// the file (a later line may rewrite any message): ls -l of the session's gemini/ folder took the daemon from
// 32 MiB to 1.75 GB, and sessionfs log of 8 such lines 3.1 GB and 92 s.
const (
	geminiChatID   = "9ab916a9-2021-45fc-83cd-518e4cf981a0"
	geminiCall     = `{"name":"t","args":{"a":1},"status":"success"}`
	geminiLineSize = 16<<20 - 1<<10
	// geminiMemoryBound is what a reader of that chat may take, the daemon or sessionfs log: its memory at start
	// (about 32 MiB) and a rendering's bounds (a line of 16 MiB held twice at most, and the 16 MiB rendering).
	geminiMemoryBound = 200 << 20
)

// writeHostileGeminiChat writes the chat into session id with lines message lines of tiny calls, readable by
// everyone (the attack reads it as uid 65534), and returns the calls it holds.
func writeHostileGeminiChat(t *testing.T, store, id string, lines int) int {
	t.Helper()
	dir := filepath.Join(store, "sessions", id, ".gemini", "tmp", "workspace", "chats")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for d := dir; d != filepath.Join(store, "sessions", id); d = filepath.Dir(d) {
		require.NoError(t, os.Chmod(d, 0o755))
	}
	f, err := os.OpenFile(filepath.Join(dir, "session-2026-12-01T00-00-9ab916a9.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	require.NoError(t, err)
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprintf(w, `{"sessionId":%q,"startTime":"2026-12-01T00:00:00Z"}`+"\n", geminiChatID)
	fmt.Fprintf(w, `{"id":"p0","timestamp":"2026-12-01T00:00:01Z","type":"user","content":[{"text":"the word is marmalade"}]}`+"\n")
	calls := 0
	for i := range lines {
		head := fmt.Sprintf(`{"id":"m%d","timestamp":"2026-12-01T00:00:%02dZ","type":"gemini","content":"calls","toolCalls":[`, i, 2+i)
		w.WriteString(head)
		n := len(head)
		for j := 0; n+len(geminiCall)+4 < geminiLineSize; j++ {
			if j > 0 {
				w.WriteByte(',')
				n++
			}
			w.WriteString(geminiCall)
			n += len(geminiCall)
			calls++
		}
		w.WriteString("]}\n")
	}
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
	return calls
}

// kiB reads a /proc status figure ("1234 kB").
func kiB(t *testing.T, v string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(v, "kB")))
	require.NoError(t, err, "%q", v)
	return n
}

// TestAttackGeminiChatDaemonMemory: uid 65534 lists the session's Gemini conversations on an --allow-other mount
// (ls -l: each file's size is its rendering's). The daemon's peak memory (VmHWM) stays within geminiMemoryBound,
// and the rendering says where it was cut.
func TestAttackGeminiChatDaemonMemory(t *testing.T) {
	need(t, os.Geteuid() == 0, "reads as uid 65534 on an --allow-other mount")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	calls := writeHostileGeminiChat(t, store, "s1", 4)
	t.Logf("the chat: 4 message lines of %d MiB, %d tool calls", geminiLineSize>>20, calls)
	m := mount(t, store, "--allow-other")
	openUp(t, m.mnt)
	pid := m.serverPID(t)
	start := kiB(t, procStatus(t, pid)["VmHWM"])

	asNobody := func(what string, args ...string) string {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		var out syncBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Start())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		began := time.Now()
		select {
		case err := <-done:
			t.Logf("%s: %s after %v; the daemon's peak memory: %d MiB", what, errText(err),
				time.Since(began).Round(time.Millisecond), kiB(t, procStatus(t, pid)["VmHWM"])>>10)
			require.NoError(t, err, out.String())
		case <-time.After(hangBound):
			peak := procStatus(t, pid)["VmHWM"]
			m.stop(t) // what the reader waits on ends with the daemon
			<-done
			t.Fatalf("%s: no answer after %v (the daemon's peak memory: %s)", what, hangBound, peak)
		}
		return out.String()
	}
	view := filepath.Join(m.mnt, "conversations", "s1", "gemini")
	out := asNobody("ls -l "+view, "ls", "-l", view)
	t.Logf("ls -l:\n%s", out)
	require.Contains(t, out, geminiChatID+".md")
	peak := kiB(t, procStatus(t, pid)["VmHWM"])
	t.Logf("the daemon's peak memory: %d MiB at start, %d MiB after ls -l (bound: %d MiB)", start>>10, peak>>10, geminiMemoryBound>>20)
	assert.Less(t, peak, geminiMemoryBound>>10, "one session's Gemini chat took the daemon's memory")

	md := filepath.Join(view, geminiChatID+".md")
	head := asNobody("head of the rendering", "head", "-c", "4096", md)
	assert.Contains(t, head, "marmalade", "the rendering begins with the chat")
	tail := asNobody("tail of the rendering", "tail", "-c", "1024", md)
	t.Logf("the rendering ends:\n%s", tail)
	assert.True(t, strings.Contains(tail, "left out") || strings.Contains(tail, "cut here"), "the rendering says it was cut")
	peak = kiB(t, procStatus(t, pid)["VmHWM"])
	assert.Less(t, peak, geminiMemoryBound>>10, "one session's Gemini chat took the daemon's memory")
}

// TestAttackGeminiChatLogMemory: sessionfs log of the chat at 128 MiB (8 lines) prints it within
// geminiMemoryBound of memory (the child's maxrss) and within logBound, ending with the note that says what was
// left out.
func TestAttackGeminiChatLogMemory(t *testing.T) {
	const logBound = 40 * time.Second // 85-118 s before, 11 s after on a loaded 2-core machine
	store := t.TempDir()
	ok(t, store, "new", "s1")
	calls := writeHostileGeminiChat(t, store, "s1", 8)
	t.Logf("the chat: 8 message lines of %d MiB, %d tool calls", geminiLineSize>>20, calls)
	cmd := exec.Command(bin, "log", "s1", geminiChatID[:8])
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	out := &tailWriter{keep: 4096}
	var stderr syncBuffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	require.NoError(t, cmd.Start())
	// The child's peak is read from its own VmHWM as it runs: wait4's ru_maxrss counts, from the vfork Go starts a
	// child with, the peak of this test process itself (652 MiB once the suite had run: the figure was ours).
	var hwm atomic.Int64 // KiB
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			kib, ok := vmHWM(cmd.Process.Pid)
			if !ok {
				return
			}
			hwm.Store(max(hwm.Load(), kib))
			time.Sleep(5 * time.Millisecond)
		}
	}()
	done := make(chan error, 1)
	go func() { <-sampled; done <- cmd.Wait() }()
	began := time.Now()
	select {
	case err := <-done:
		require.NoError(t, err, stderr.String())
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("sessionfs log: no end after 3 minutes")
	}
	took := time.Since(began)
	rss := hwm.Load() // KiB
	t.Logf("sessionfs log: %d MiB printed in %v, peak memory %d MiB (bounds: %v, %d MiB); it ends:\n%s",
		out.n>>20, took.Round(time.Millisecond), rss>>10, logBound, geminiMemoryBound>>20, out.tail())
	assert.Contains(t, out.head, "marmalade", "log prints the chat")
	assert.True(t, strings.Contains(out.tail(), "left out"), "log says what it left out")
	assert.Less(t, rss, int64(geminiMemoryBound>>10), "sessionfs log of one Gemini chat")
	assert.Less(t, took, logBound, "sessionfs log of one Gemini chat")
}

// tailWriter counts what is written, keeping its first and its last keep bytes.
type tailWriter struct {
	keep int
	n    int
	head string
	last []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	if len(w.head) < w.keep {
		w.head += string(p[:min(len(p), w.keep-len(w.head))])
	}
	w.n += len(p)
	w.last = append(w.last, p...)
	if len(w.last) > 2*w.keep {
		w.last = append(w.last[:0], w.last[len(w.last)-w.keep:]...)
	}
	return len(p), nil
}

func (w *tailWriter) tail() string {
	return string(w.last[max(0, len(w.last)-w.keep):])
}

// vmHWM is the peak resident size of process pid, in KiB, from its /proc status; ok is false once it has exited
// (a zombie has no VmHWM line).
func vmHWM(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
