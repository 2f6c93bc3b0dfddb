package text

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/agentstest"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/agents/gemini"
	"github.com/sessionfs/sessionfs/layout"
)

const hostileID = "0badc0de-0000-4000-8000-000000000001"

// hostile is a session whose one Claude transcript is body (written by the session: anything at all).
func hostile(t testing.TB, body string) (*layout.Dir, agents.Conversation, string) {
	t.Helper()
	sess, root := openSession(t)
	dir := filepath.Join(root, ".claude/projects", layout.CanonicalProject)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, hostileID+".jsonl"), []byte(body), 0o600))
	c := agents.Conversation{Agent: "claude", ID: hostileID,
		Path: sess.Name() + "/.claude/projects/" + layout.CanonicalProject + "/" + hostileID + ".jsonl"}
	return sess, c, dir
}

// openSession is agentstest.OpenSession for a test or a benchmark.
func openSession(tb testing.TB) (*layout.Dir, string) {
	if t, ok := tb.(*testing.T); ok {
		return agentstest.OpenSession(t)
	}
	root := tb.TempDir()
	d, err := layout.OpenDir(root)
	require.NoError(tb, err)
	tb.Cleanup(func() { d.Close() })
	return d, root
}

// terminalSafe fails unless s could reach a terminal unharmed: valid UTF-8, no control character but newline and
// tab, no character that reorders or hides text.
func terminalSafe(t testing.TB, s string) {
	t.Helper()
	require.True(t, utf8.ValidString(s), "invalid UTF-8 in %q", s)
	for _, r := range s {
		if r == '\n' || r == '\t' {
			continue
		}
		require.False(t, r < 0x20 || r >= 0x7f && r < 0xa0 || hidden(r), "control character %U in %q", r, s)
	}
}

func prompt(text string) string {
	b, _ := json.Marshal(text)
	return `{"type":"user","message":{"role":"user","content":` + string(b) + `}}` + "\n"
}

func TestHostileTextIsNeutralized(t *testing.T) {
	nasty := "a\x1b]52;c;ZXZpbA==\x07b\x1b[2J\x1b[31mred\x00nul\u009b31m\u202eevil\u200b\r\rcr\xff\xfe end"
	body := prompt(nasty) +
		`{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"t\u001b","name":"Ba\u001b]0;title\u0007sh","input":{"command":"rm\u001b[1A -rf"}}]}}` + "\n" +
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t\u001b","content":"\u001b[?1049h\nout"}]}}` + "\n" +
		"{\"type\":\"summary\",\"summary\":\"s\\u0007\\u009d\"}\n"
	sess, c, _ := hostile(t, body)
	es := entries(t, sess, claude.Agent, c)
	require.Len(t, es, 4)
	assert.Equal(t, `a\x1b]52;c;ZXZpbA==\x07b\x1b[2J\x1b[31mred\x00nul\x9b31m\u202eevil\u200b\x0d\x0dcr`+"\ufffd\ufffd end", es[0].Text)
	assert.Equal(t, `Ba\x1b]0;title\x07sh(rm\x1b[1A -rf)`, es[1].Text)
	assert.Equal(t, `Ba\x1b]0;title\x07sh`, es[2].Tool)
	var b strings.Builder
	require.NoError(t, Render(&b, sess, claude.Agent, c))
	terminalSafe(t, b.String())
	for _, e := range es {
		terminalSafe(t, e.Text)
		terminalSafe(t, e.Tool)
	}
}

func TestHugeLineIsABoundedNoteInBoundedMemory(t *testing.T) {
	huge := prompt(strings.Repeat("x", 50<<20))
	sess, c, _ := hostile(t, prompt("before")+huge+prompt("after"))
	huge = ""
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var b strings.Builder
	require.NoError(t, Render(&b, sess, claude.Agent, c))
	runtime.ReadMemStats(&after)
	out := b.String()
	assert.Contains(t, out, "before")
	assert.Contains(t, out, "after")
	assert.Contains(t, out, "a line of 52428854 bytes left out")
	assert.Less(t, len(out), 4096)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(3*MaxLine), "a 50 MB line is not held")
}

func TestLongTextIsCut(t *testing.T) {
	sess, c, _ := hostile(t, prompt(strings.Repeat("y", 5<<20)))
	es := entries(t, sess, claude.Agent, c)
	require.Len(t, es, 1)
	assert.LessOrEqual(t, len(es[0].Text), MaxText+64)
	assert.True(t, strings.HasSuffix(es[0].Text, "more bytes]"), es[0].Text[len(es[0].Text)-40:])
}

func TestDeeplyNestedAndBrokenLinesAreSkipped(t *testing.T) {
	deep := `{"type":"user","message":{"role":"user","content":` + strings.Repeat("[", 1<<20) + strings.Repeat("]", 1<<20) + "}}\n"
	parts := `{"type":"assistant","message":{"role":"assistant","content":[` +
		strings.Repeat(`{"type":"text","text":"`+strings.Repeat("[", 100)+`"},`, 1000) + `{"type":"x"}]}}` + "\n"
	body := deep + "\x00\x00\x00\n" + `{"type":"user","message":` + "\n" + parts + prompt("survived") + `{"type":"user","message":{"role":"user","content":"torn`
	sess, c, _ := hostile(t, body)
	es := entries(t, sess, claude.Agent, c)
	require.NotEmpty(t, es)
	assert.Equal(t, "survived", es[len(es)-1].Text)
}

func TestSubagentFilesAreReadBeneathTheSessionOnly(t *testing.T) {
	sess, c, dir := hostile(t, prompt("main"))
	subs := filepath.Join(dir, hostileID, "subagents")
	require.NoError(t, os.MkdirAll(subs, 0o755))
	secret := filepath.Join(t.TempDir(), "secret.jsonl")
	require.NoError(t, os.WriteFile(secret, []byte(prompt("HOST SECRET")), 0o600))
	require.NoError(t, os.Symlink(secret, filepath.Join(subs, "agent-link.jsonl")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(subs, "agent-fifo.jsonl"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(subs, "agent-ok.jsonl"), []byte(prompt("sub")), 0o600))
	var got []string
	for _, e := range entries(t, sess, claude.Agent, c) {
		got = append(got, e.Subagent+":"+e.Text)
	}
	assert.Equal(t, []string{":main", "ok:sub"}, got, "no symlink followed, no FIFO opened")
}

func TestTranscriptThatIsASymlinkIsRefused(t *testing.T) {
	sess, c, dir := hostile(t, "")
	secret := filepath.Join(t.TempDir(), "secret.jsonl")
	require.NoError(t, os.WriteFile(secret, []byte(prompt("HOST SECRET")), 0o600))
	p := filepath.Join(dir, hostileID+".jsonl")
	require.NoError(t, os.Remove(p))
	require.NoError(t, os.Symlink(secret, p))
	var b strings.Builder
	err := Render(&b, sess, claude.Agent, c)
	require.Error(t, err)
	assert.NotContains(t, b.String(), "HOST SECRET")
}

func TestSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain\ttext\nline":     "plain\ttext\nline",
		"crlf\r\nnext":          "crlf\nnext",
		"\x1b[31m":              `\x1b[31m`,
		"\x7f\u0085\u009b":      `\x7f\x85\x9b`,
		"bad\xc3(":              "bad\ufffd(",
		"\u2066iso\u2069\ufeff": `\u2066iso\u2069\ufeff`,
		"emoji 😀 é":             "emoji 😀 é",
	} {
		assert.Equal(t, want, Safe(in, 0), "%q", in)
	}
	assert.Equal(t, "a b c", OneLine("  a\n\tb \u2028 c\n", 0))
	assert.Equal(t, "abcd… [6 more bytes]", Safe("abcdefghij", 4))
}

// A Gemini chat is held whole while it is read: a hostile one's messages and texts are bounded.
func TestHostileGeminiChatIsBounded(t *testing.T) {
	defer func(n, held int) { maxGeminiMessages, maxGeminiHeld = n, held }(maxGeminiMessages, maxGeminiHeld)
	maxGeminiMessages, maxGeminiHeld = 1000, 1<<20
	sess, root := openSession(t)
	p := filepath.Join(root, ".gemini/tmp/w/chats/session-2026-11-26T01-00-9ab916a9.jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	f, err := os.Create(p)
	require.NoError(t, err)
	w := bufio.NewWriter(f)
	big := strings.Repeat("z", 300<<10)
	for i := range maxGeminiMessages + 5 {
		text := "m"
		if i < 20 {
			text = big // 6 MB of text, 5 MB once cut to MaxText: past the budget
		}
		fmt.Fprintf(w, `{"id":"m%d","type":"user","content":%q}`+"\n", i, text)
	}
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
	c := only(t, sess, gemini.Agent)
	es := entries(t, sess, gemini.Agent, c)
	require.Len(t, es, maxGeminiMessages+1)
	assert.Equal(t, "(5 more messages left out: more than the 1000 read)", es[len(es)-1].Text)
	total := 0
	for _, e := range es {
		total += len(e.Text)
	}
	assert.Less(t, total, maxGeminiHeld+MaxText+maxGeminiMessages*(MaxCall+32))
	assert.LessOrEqual(t, len(es[19].Text), MaxCall+32, "past the budget, a line")
}
