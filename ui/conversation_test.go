package ui

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConversationFoldsCallsAndNestsSubagents(t *testing.T) {
	st := newStore(t)
	dir := newSession(t, st, "nest", nil)
	const conv = "55555555-0000-4000-8000-000000000001"
	p := transcript(t, dir, conv)
	call, _ := json.Marshal(map[string]any{"type": "assistant", "sessionId": conv, "uuid": "c1", "timestamp": "2026-11-26T01:00:02Z",
		"message": map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1",
			"name": "Bash", "input": map[string]any{"command": "go test ./..."}}}}})
	result, _ := json.Marshal(map[string]any{"type": "user", "sessionId": conv, "uuid": "c2", "timestamp": "2026-11-26T01:00:03Z",
		"message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1",
			"content": "ok  \tgithub.com/x\t0.1s"}}}})
	appendFile(t, p, claudeLine(conv, "user", "run the tests", 1)+string(call)+"\n"+string(result)+"\n"+claudeLine(conv, "assistant", "they pass", 4))
	subs := filepath.Join(strings.TrimSuffix(p, ".jsonl"), "subagents")
	require.NoError(t, os.MkdirAll(subs, 0o755))
	appendFile(t, filepath.Join(subs, "agent-a1b2.jsonl"), claudeLine(conv, "user", "the subagent's task", 5))
	s := serve(t, st)
	resp, body := s.get(t, "/s/nest/c/claude/"+conv)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, 5, entryCount(body), body)
	assert.Contains(t, body, `<details class="entry tool_call" id="e2"><summary>`)
	assert.Contains(t, body, "go test ./...")
	assert.Contains(t, body, `<details class="entry tool_result" id="e3">`)
	i := strings.Index(body, `<section class="subagent" data-subagent="`)
	require.GreaterOrEqual(t, i, 0, "the subagent's section")
	section, _, _ := strings.Cut(body[i:], "</section>")
	assert.Contains(t, section, "the subagent&#39;s task")
	assert.NotContains(t, section, "they pass", "the main conversation's entries are outside it")
	assert.Contains(t, body, `id="end"`)
}

func TestConversationNotFound(t *testing.T) {
	st := newStore(t)
	newSession(t, st, "empty", nil)
	s := serve(t, st)
	resp, _ := s.get(t, "/s/empty/c/nobody/x")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = s.get(t, "/s/missing/c/claude/x")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	_, body := s.get(t, "/s/empty/c/claude/<x>")
	assert.Contains(t, body, "<h1>Not found</h1>")
	assert.NotContains(t, body, "<x>")
}
