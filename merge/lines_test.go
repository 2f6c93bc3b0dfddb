package merge

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func claudeLine(uuid, at, text string) string {
	return fmt.Sprintf(`{"type":"user","uuid":%q,"timestamp":%q,"message":{"role":"user","content":%q}}`, uuid, at, text) + "\n"
}

// Two machines each added turns to one conversation since they last agreed: the merge holds every line once,
// the shared start first, then the added lines by their times, the same bytes whichever copy is whose.
func TestLinesJoinsWhatBothAdded(t *testing.T) {
	base := claudeLine("u1", "2026-12-03T10:00:00Z", "begun on A") + claudeLine("u2", "2026-12-03T10:00:01Z", "reply")
	a := base + claudeLine("u3", "2026-12-03T10:05:00Z", "A goes on") + claudeLine("u4", "2026-12-03T10:05:01Z", "reply on A")
	b := base + claudeLine("u5", "2026-12-03T10:02:00Z", "B goes on from another cwd")
	want := base + claudeLine("u5", "2026-12-03T10:02:00Z", "B goes on from another cwd") +
		claudeLine("u3", "2026-12-03T10:05:00Z", "A goes on") + claudeLine("u4", "2026-12-03T10:05:01Z", "reply on A")
	assert.Equal(t, want, string(Lines([]byte(a), []byte(b))))
	assert.Equal(t, want, string(Lines([]byte(b), []byte(a))))
	assert.Equal(t, want, string(Lines([]byte(want), []byte(a))), "a copy already merged takes nothing twice")
	assert.Equal(t, want, string(Lines([]byte(want), []byte(want))))
}

// Kimi's lines carry "time" in milliseconds; lines of no time keep each copy's order and go by their bytes.
func TestLinesTimes(t *testing.T) {
	a := `{"type":"metadata"}` + "\n" + `{"type":"turn.prompt","time":1796282107397}` + "\n"
	b := `{"type":"metadata"}` + "\n" + `{"type":"turn.prompt","time":1796282107000}` + "\n"
	assert.Equal(t, `{"type":"metadata"}`+"\n"+`{"type":"turn.prompt","time":1796282107000}`+"\n"+`{"type":"turn.prompt","time":1796282107397}`+"\n",
		string(Lines([]byte(a), []byte(b))))
	assert.Equal(t, "x\ny\nz\n", string(Lines([]byte("x\nz\n"), []byte("y\n"))), "no times: by their bytes, each copy's order kept")
	assert.Equal(t, "a\nb\n", string(Lines([]byte("a\nb"), []byte("a\n"))), "an unfinished last line is ended")
	assert.Empty(t, Lines(nil, nil))
}

// A line a copy holds twice (a tool's same output) is kept twice; one both copies added next is kept once; one
// both added out of their order is kept twice rather than either copy's order broken.
func TestLinesRepeats(t *testing.T) {
	assert.Equal(t, "s\nr\nr\n", string(Lines([]byte("s\nr\nr\n"), []byte("s\nr\n"))))
	assert.Equal(t, "s\nr\nr\n", string(Lines([]byte("s\nr\n"), []byte("s\nr\nr\n"))))
	assert.Equal(t, "s\nn\n", string(Lines([]byte("s\nn\n"), []byte("s\nn\n"))))
	assert.Equal(t, "s\nx\nz\n", string(Lines([]byte("s\nx\nz\n"), []byte("s\nz\n"))))
	assert.Equal(t, "s\nq\nr\nq\n", string(Lines([]byte("s\nr\nq\n"), []byte("s\nq\nr\n"))))
}

// FuzzLines: whatever two copies hold, the merge is the same bytes both ways, keeps each copy's lines in their
// order, holds each line as many times as the copy with most of it, and merging it again with either copy
// changes nothing.
func FuzzLines(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte("a\nc\nd\n"))
	f.Add([]byte(claudeLine("u1", "2026-12-03T10:00:00Z", "x")), []byte("junk\n\n"))
	f.Add([]byte("r\nr\nq"), []byte("r\nq\nr\n"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		m := Lines(a, b)
		require.Equal(t, m, Lines(b, a), "symmetric")
		lm := split(m)
		for _, c := range [][]byte{a, b} {
			lc := split(c)
			require.True(t, subsequence(lc, lm), "a copy's order is kept:\n%q\nin\n%q", c, m)
		}
		count := func(ls [][]byte) map[string]int {
			n := map[string]int{}
			for _, l := range ls {
				n[string(l)]++
			}
			return n
		}
		ca, cb, cm := count(split(a)), count(split(b)), count(lm)
		for l, n := range cm {
			require.GreaterOrEqual(t, n, max(ca[l], cb[l]), "line %q: none lost", l)
			require.LessOrEqual(t, n, ca[l]+cb[l], "line %q: none made up", l)
		}
		require.Equal(t, Lines(a, nil), Lines(a, a), "a copy merged with itself is itself")
		if len(m) > 0 {
			require.True(t, bytes.HasSuffix(m, []byte("\n")))
		}
	})
}

func subsequence(sub, of [][]byte) bool {
	i := 0
	for _, l := range of {
		if i < len(sub) && bytes.Equal(sub[i], l) {
			i++
		}
	}
	return i == len(sub)
}

func TestSplit(t *testing.T) {
	assert.Equal(t, []string{"a", "", "b"}, strs(split([]byte("a\n\nb\n"))))
	assert.Equal(t, []string{"a", "b"}, strs(split([]byte("a\nb"))))
}

func strs(ls [][]byte) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = string(l)
	}
	return out
}

func TestAppended(t *testing.T) {
	for rel, want := range map[string]bool{
		".claude/projects/-session-workspace/0a1b2c3d-0000-4000-8000-000000000001.jsonl":                            true,
		".claude/projects/-session-workspace/0a1b2c3d-0000-4000-8000-000000000001/subagents/agent-a1.jsonl":         true,
		".codex/sessions/2026/12/03/rollout-2026-12-03T10-00-00-0a1b2c3d-0000-4000-8000-000000000001.jsonl":         true,
		".codex/sessions/2026/12/03/rollout-2026-12-03T10-00-00-0a1b2c3d-0000-4000-8000-000000000001.jsonl.zst":     false,
		".qwen/projects/-session-workspace/chats/0a1b2c3d-0000-4000-8000-000000000001.jsonl":                        true,
		".kimi-code/sessions/wd_a_95ff0dd53803/session_018507bd-ba8a-4c29-a52c-a2d9dc4f7253/agents/main/wire.jsonl": true,
		".copilot/session-state/36e50d69-d228-4e9a-8561-0d1053620d65/events.jsonl":                                  true,
		".pi/sessions/--session-workspace--/2026-12-02T14-00-00-000Z_019ae0c4-7b2a-7c3e-9f10-2b3c4d5e6f70.jsonl":    false, // rewritten whole on a format change
		".gemini/tmp/workspace/chats/session-2026-11-23T07-02-9ab916a9.jsonl":                                       false, // later lines replace earlier ones
		"workspace/notes.jsonl":                           false,
		".claude/history.jsonl":                           false,
		".kimi-code/sessions/wd_a_1/session_x/state.json": false,
	} {
		assert.Equal(t, want, Appended(rel), rel)
	}
}
