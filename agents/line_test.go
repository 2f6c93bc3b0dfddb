package agents_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/agents/codex"
	"github.com/sessionfs/sessionfs/agents/gemini"
	"github.com/sessionfs/sessionfs/agents/qwen"
)

func TestFileOf(t *testing.T) {
	for rel, want := range map[string]string{
		".codex/sessions/2026/11/23/rollout-2026-11-23T07-05-15-01A20739-265b-7793-acee-f94fce8f06e3.jsonl": "codex 01a20739",
		".gemini/tmp/workspace/chats/session-2026-11-23T07-00-9ab916a9.jsonl":                               "gemini 9ab916a9",
		".qwen/projects/-session-workspace/chats/6ff0322b-05c7-4854-be6e-8e9ae644122e.jsonl":                "qwen 6ff0322b",
	} {
		a, conv, ok := all.FileOf(rel)
		require.True(t, ok, rel)
		assert.Equal(t, want, a.Name+" "+conv, rel)
	}
	for _, rel := range []string{
		".codex/sessions/2026/11/rollout-x-01a20739-265b-7793-acee-f94fce8f06e3.jsonl", // not a day folder
		".codex/history.jsonl",
		".gemini/tmp/workspace/logs/session-2026-11-23T07-00-9ab916a9.jsonl",
		".qwen/projects/x/chats/archive/6ff0322b-05c7-4854-be6e-8e9ae644122e.jsonl",
		".qwen/projects/x/chats/notes.jsonl",
		".claude/projects/-session-workspace/6ff0322b-05c7-4854-be6e-8e9ae644122e.jsonl",
		"workspace/.qwen/projects/x/chats/6ff0322b-05c7-4854-be6e-8e9ae644122e.jsonl",
	} {
		_, _, ok := all.FileOf(rel)
		assert.False(t, ok, rel)
	}
}

// Each agent's file, as its CLI wrote it, renders as its messages: the user's words and the replies, never the
// context the agents add themselves, metadata, or Gemini's rewrite of the whole history on resume.
func TestLine(t *testing.T) {
	stamp := regexp.MustCompile(`^(\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d `) // the date for a message not of today
	for _, tt := range []struct {
		agent *agents.Agent
		glob  string
		want  []string
	}{
		{codex.Agent, ".codex/sessions/*/*/*/*.jsonl", []string{"[codex] user hello there", "[codex] assistant stub reply",
			"[codex] user again", "[codex] assistant stub reply"}},
		{gemini.Agent, ".gemini/tmp/ws/chats/session-2026-11-23T07-00-*.jsonl", []string{"[gemini] user hello there",
			"[gemini] assistant stub reply", "[gemini] user again", "[gemini] assistant stub reply"}},
		{qwen.Agent, ".qwen/projects/*/chats/*.jsonl", []string{"[qwen] user hello there", "[qwen] assistant stub reply"}},
	} {
		files, err := filepath.Glob(filepath.Join("testdata", "session", tt.glob))
		require.NoError(t, err)
		require.Len(t, files, 1, tt.glob)
		b, err := os.ReadFile(files[0])
		require.NoError(t, err)
		var got []string
		for _, l := range bytes.Split(b, []byte("\n")) {
			if s := agents.Line(tt.agent, l); s != "" {
				require.Regexp(t, stamp, s)
				got = append(got, strings.Join(strings.Fields(stamp.ReplaceAllString(s, "")), " "))
			}
		}
		assert.Equal(t, tt.want, got, tt.agent.Name)
	}
}

func TestLineToolsAndGarbage(t *testing.T) {
	assert.Contains(t, agents.Line(codex.Agent, []byte(`{"timestamp":"2026-11-23T07:05:15Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"cmd\":\"ls\"}"}}`)),
		`[codex] assistant → shell({"cmd":"ls"})`)
	assert.Contains(t, agents.Line(qwen.Agent, []byte(`{"type":"assistant","message":{"parts":[{"functionCall":{"name":"read_file","args":{"path":"a"}}}]}}`)),
		`→ read_file({"path":"a"})`)
	assert.Contains(t, agents.Line(qwen.Agent, []byte(`{"type":"tool_result","message":{"parts":[{"functionResponse":{"name":"read_file"}}]}}`)), "← tool result")
	assert.Contains(t, agents.Line(gemini.Agent, []byte(`{"id":"1","type":"gemini","content":"","toolCalls":[{"name":"ls","args":{}}]}`)), "→ ls({})")
	for _, bad := range []string{"", "{", "[]", "null", `{"type":"user"}`, `{"$set":{"messages":[]}}`, `{"id":"x","type":"info","content":"hi"}`} {
		for _, a := range []*agents.Agent{codex.Agent, gemini.Agent, qwen.Agent} {
			assert.Empty(t, agents.Line(a, []byte(bad)), "%s %q", a.Name, bad)
		}
	}
	long := `{"type":"user","message":{"parts":[{"text":"` + strings.Repeat("é", 500) + `"}]}}`
	assert.LessOrEqual(t, len([]rune(agents.Line(qwen.Agent, []byte(long)))), 240)
}

// Render's line is the parts' words joined by single spaces, cut at 200 characters, read no further than that.
func TestRenderWords(t *testing.T) {
	long := strings.Repeat("é ", 300)
	for _, parts := range [][]string{
		nil, {""}, {"  a\tb\n"}, {"a", "b"}, {"a ", " b"}, {long}, {long[:399]}, {long[:400]}, {long[:401]},
		{"x", strings.Repeat("y", 198), "z"}, {"x", strings.Repeat("y", 197), "z"},
	} {
		old := strings.Join(strings.Fields(strings.Join(parts, " ")), " ")
		if r := []rune(old); len(r) > 200 {
			old = string(r[:199]) + "…"
		}
		assert.Equal(t, "--:--:-- who       "+old, agents.Render(time.Time{}, "who", parts), "%q", parts)
	}
}
