package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// Sessions for the ui tests: Claude transcripts written as the CLI writes them, and a hostile session written as
// its own processes could write it.

// claudeFolder is where a session's Claude conversations are kept (the canonical project folder).
func claudeFolder(store, id string) string {
	return filepath.Join(store, "sessions", id, ".claude", "projects", "-session-workspace")
}

// writeTranscript writes a Claude conversation of lines into session id, and returns its file.
func writeTranscript(t *testing.T, store, id, uuid string, lines ...string) string {
	t.Helper()
	dir := claudeFolder(store, id)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	p := filepath.Join(dir, uuid+".jsonl")
	require.NoError(t, os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	return p
}

func claudeLine(t *testing.T, v map[string]any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// promptLine is a user's prompt; replyLine the model's answer; toolLine a call of a tool; resultLine its result.
func promptLine(t *testing.T, text string) string {
	return claudeLine(t, map[string]any{"type": "user", "timestamp": "2026-11-25T10:00:00Z",
		"message": map[string]any{"role": "user", "content": text}})
}

func replyLine(t *testing.T, text string) string {
	return claudeLine(t, map[string]any{"type": "assistant", "timestamp": "2026-11-25T10:00:01Z",
		"message": map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}}}})
}

func toolLine(t *testing.T, id, name string, input map[string]any) string {
	return claudeLine(t, map[string]any{"type": "assistant", "timestamp": "2026-11-25T10:00:02Z",
		"message": map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}}}})
}

func resultLine(t *testing.T, id, content string) string {
	return claudeLine(t, map[string]any{"type": "user", "timestamp": "2026-11-25T10:00:03Z",
		"message": map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": id, "content": content}}}})
}

// hostilePayloads would run script, load from foreign (another origin) or navigate away if a page took them as
// HTML, a URL or a template; each names itself in its alert so a dialog says which got through.
func hostilePayloads(foreign string) []string {
	return []string{
		`<script>alert('script-tag')</script>`,
		`<img src=x onerror="alert('img-onerror')">`,
		`<svg onload="alert('svg-onload')"></svg>`,
		`"><script>alert('attr-breakout')</script>`,
		`'><img src=x onerror=alert('attr-breakout-single')>`,
		`</title></textarea></code></pre></details><script>alert('close-tags')</script>`,
		`<a href="javascript:alert('js-link')">click me</a>`,
		`javascript:alert('bare-js-url')`,
		`[markdown link](javascript:alert('md-js-link')) ![markdown image](` + foreign + `/md-image.png)`,
		`<img src="` + foreign + `/img.png">`,
		`<iframe src="` + foreign + `/iframe"></iframe>`,
		`<link rel="stylesheet" href="` + foreign + `/style.css">`,
		`<style>@import url(` + foreign + `/import.css); body{background:url(` + foreign + `/bg.png)}</style>`,
		`<meta http-equiv="refresh" content="0;url=` + foreign + `/meta-refresh">`,
		`<base href="` + foreign + `/base/">`,
		`<form action="` + foreign + `/form"><button autofocus onfocus="alert('autofocus')">go</button></form>`,
		`<object data="` + foreign + `/object"></object><embed src="` + foreign + `/embed">`,
		`{{.}} {{template "x"}} ${alert('template-literal')}`,
		`<math><mtext><table><mglyph><style><img src=x onerror=alert('mxss')>`,
	}
}

// terminalEscapes are control sequences a terminal would obey (clipboard write, title, clear screen, C1 CSI, NUL,
// bidi override), written as JSON escapes.
const terminalEscapes = `\u001b]52;c;cHduZWQ=\u0007\u001b]0;pwned\u0007\u009b31m\u001b[2J\u0000\u202e`

// hostileSession makes session "evil" of store as its own processes could leave it: a conversation whose prompts,
// replies, tool calls and results carry hostilePayloads, terminal escapes, invalid UTF-8 and a line of 50 MB;
// a conversation and a subagent that are links to transcripts of the host's; a workspace holding an SVG and an
// HTML file with script, files, a conversation, a subagent, a cwd named as markup, links out to secret (a host folder holding hostMarker), a FIFO,
// invalid UTF-8 and escapes. It returns the main conversation's id.
func hostileSession(t *testing.T, store, foreign, secret string) string {
	t.Helper()
	ok(t, store, "new", "evil")
	const uuid = "6e0c5a1b-0bad-4bad-8bad-0000000000e1"
	var lines []string
	for i, p := range hostilePayloads(foreign) {
		id := "toolu_" + string(rune('a'+i))
		lines = append(lines, promptLine(t, "prompt "+p), replyLine(t, "reply "+p),
			toolLine(t, id, "Bash", map[string]any{"command": "echo " + p, "description": p, "url": p}),
			resultLine(t, id, "result "+p))
	}
	lines = append(lines,
		toolLine(t, "toolu_name", `<img src=x onerror=alert('tool-name')>`, map[string]any{"file_path": "javascript:alert('tool-path')"}),
		`{"type":"user","timestamp":"2026-11-25T10:00:00Z","message":{"role":"user","content":"escapes `+terminalEscapes+` and invalid UTF-8 `+"\xff\xfe\xc0\xaf"+`"}}`,
		`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"reply `+terminalEscapes+"\xed\xa0\x80"+`"},{"type":"tool_use","id":"t1","name":"Bash`+terminalEscapes+`","input":{"command":"ls `+terminalEscapes+`"}}]}}`,
		`{"type":"user","toolUseResult":{"agentId":"link"},"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"out `+terminalEscapes+`"}]}}`,
		`{"type":"user","message":{"role":"user","content":"`+strings.Repeat("A", 50<<20)+`"}}`,
		promptLine(t, "the last words of the hostile conversation"),
	)
	lines = append(lines[:len(lines)-1],
		`{"type":"user","cwd":"/w/<img src=x onerror=alert('cwd')>","message":{"role":"user","content":"a cwd of markup"}}`,
		`{"type":"user","isSidechain":true,"agentId":"<svg onload=alert('agent-id')>","message":{"role":"user","content":"inline subagent"}}`,
		lines[len(lines)-1])
	writeTranscript(t, store, "evil", uuid, lines...)
	folder := claudeFolder(store, "evil")
	writeTranscript(t, store, "evil", `<img src=x onerror=alert('conversation-name')>`, promptLine(t, "a conversation named as markup"))
	markupSub := filepath.Join(folder, uuid, "subagents")
	require.NoError(t, os.MkdirAll(markupSub, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(markupSub, `agent-<svg onload=alert('subagent-name')>.jsonl`),
		[]byte(promptLine(t, "a subagent named as markup")+"\n"), 0o600))

	// The host's transcripts: shown, they would show hostMarker.
	hostDir := t.TempDir()
	hostLine := `{"type":"user","message":{"role":"user","content":"` + hostMarker + `"}}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(hostDir, "conv.jsonl"), []byte(hostLine), 0o600))
	require.NoError(t, os.Symlink(filepath.Join(hostDir, "conv.jsonl"), filepath.Join(folder, "6e0c5a1b-0bad-4bad-8bad-0000000000e2.jsonl")))
	require.NoError(t, os.Symlink(filepath.Join(hostDir, "conv.jsonl"), filepath.Join(markupSub, "agent-link.jsonl")))

	ws := filepath.Join(store, "sessions", "evil", "workspace")
	files := map[string]string{
		"evil.svg": `<svg xmlns="http://www.w3.org/2000/svg" onload="alert('svg-file-onload')">` +
			`<script>alert('svg-file-script')</script><image href="` + foreign + `/svg-image.png"/></svg>`,
		"evil.html":                              `<html><body><script>alert('html-file')</script><img src="` + foreign + `/html-file.png"></body></html>`,
		"evil.xhtml":                             `<html xmlns="http://www.w3.org/1999/xhtml"><script>alert('xhtml-file')</script></html>`,
		"page.txt":                               `<script>alert('txt-sniffed-as-html')</script>`,
		`<img src=x onerror=alert('file-name')>`: "a file named as markup",
		`javascript:alert('file-name-link')`:     "a file named as a URL",
		"escapes.txt": strings.NewReplacer(`\u001b`, "\x1b", `\u0007`, "\x07", `\u009b`, "\u009b", `\u0000`, "\x00",
			`\u202e`, "\u202e").Replace(terminalEscapes),
		"invalid-utf8.txt": "before \xff\xfe\xc0\xaf after",
		"binary.dat":       "\x00\x01\x02\x89PNG\r\n\x1a\n\x00\x00",
	}
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "sub"), 0o755))
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644))
	}
	require.NoError(t, os.Symlink(filepath.Join(secret, "secret"), filepath.Join(ws, "leak")))
	require.NoError(t, os.Symlink(secret, filepath.Join(ws, "leak-dir")))
	require.NoError(t, os.Symlink(strings.Repeat("../", 16)+strings.TrimPrefix(secret, "/")+"/secret", filepath.Join(ws, "sub", "up")))
	require.NoError(t, os.Symlink("/proc/self/root"+secret+"/secret", filepath.Join(ws, "proc-root")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644))
	return uuid
}
