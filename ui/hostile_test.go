package ui

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const hostileConv = "0badc0de-0000-4000-8000-000000000001"

// hostileStore is a store whose one session wrote what an attacker would: markup, script URLs, SVG with script,
// terminal escapes, invalid UTF-8, a 50 MB line, a symlink out of its workspace, an HTML file. secret is a file
// outside the session the links point at.
func hostileStore(t *testing.T) (s *testServer, secret string) {
	st := newStore(t)
	dir := newSession(t, st, "evil", map[string]string{"team": "<script>alert('label')</script>"})
	secret = filepath.Join(t.TempDir(), "secret.txt")
	require.NoError(t, os.WriteFile(secret, []byte("HOST-SECRET-4f1c"), 0o600))
	p := transcript(t, dir, hostileConv)
	var b strings.Builder
	b.WriteString(claudeLine(hostileConv, "user", `<script>alert(1)</script> [click](javascript:alert(2)) <a href="javascript:alert(3)">x</a>`, 1))
	b.WriteString(claudeLine(hostileConv, "assistant", `<svg xmlns="http://www.w3.org/2000/svg" onload="alert(4)"><script>alert(5)</script></svg> <img src=x onerror=alert(6)> <style>body{display:none}</style>`, 2))
	b.WriteString(claudeLine(hostileConv, "assistant", "escapes: \x1b[31mred\x1b[0m \x1b]52;c;aGVsbG8=\x07 \x1b]8;;http://evil.example\x07link\x1b]8;;\x07 bidi \u202etxt.exe", 3))
	b.WriteString(claudeLine(hostileConv, "user", "</div></main><script src=//evil.example/x.js></script>", 4))
	require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o600))
	// Invalid UTF-8 in a line, and a line of 50 MB.
	appendFile(t, p, `{"type":"user","sessionId":"`+hostileConv+`","uuid":"00000000-0000-4000-8000-000000000005","message":{"role":"user","content":"bad `+"\xff\xfe"+` bytes"}}`+"\n")
	big := `{"type":"user","sessionId":"` + hostileConv + `","message":{"role":"user","content":"` + strings.Repeat("A", 50<<20) + `"}}` + "\n"
	appendFile(t, p, big)
	appendFile(t, p, claudeLine(hostileConv, "assistant", "after the big line", 7))
	ws := filepath.Join(dir, "workspace")
	require.NoError(t, os.Symlink(secret, filepath.Join(ws, "secret-link")))
	require.NoError(t, os.Symlink("/", filepath.Join(ws, "root-link")))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "page.html"), []byte(`<html><script>alert(7)</script></html>`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "image.svg"), []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(8)</script></svg>`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "bad.txt"), []byte("ok \xff\xfe then"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "blob.bin"), []byte("\x00\x01<script>"), 0o644))
	return serve(t, st), secret
}

// ourTags are the elements our templates write: any other in a page was planted.
var ourTags = map[string]bool{"html": true, "head": true, "meta": true, "title": true, "link": true, "script": true,
	"body": true, "header": true, "nav": true, "a": true, "form": true, "input": true, "button": true, "main": true,
	"h1": true, "h2": true, "h3": true, "small": true, "label": true, "select": true, "option": true, "div": true,
	"table": true, "thead": true, "tbody": true, "tr": true, "th": true, "td": true, "time": true, "span": true,
	"p": true, "dl": true, "dt": true, "dd": true, "ul": true, "ol": true, "li": true, "code": true, "section": true,
	"article": true, "details": true, "summary": true, "pre": true, "mark": true}

var (
	tagRE     = regexp.MustCompile(`<([a-zA-Z][a-zA-Z0-9-]*)([^>]*)>`)
	handlerRE = regexp.MustCompile(`(?i)\son[a-z]+\s*=`)
)

// noActiveContent fails if body holds markup a session could have planted: an element our templates do not
// write, an event handler, a script URL, a script but ours, a raw terminal escape, invalid UTF-8.
func noActiveContent(t *testing.T, body, what string) {
	t.Helper()
	for _, m := range tagRE.FindAllStringSubmatch(body, -1) {
		assert.True(t, ourTags[strings.ToLower(m[1])], "%s holds a <%s> element: %s", what, m[1], m[0])
		assert.False(t, handlerRE.MatchString(m[2]), "%s: an event handler in %s", what, m[0])
		assert.NotContains(t, strings.ToLower(m[2]), "javascript:", "%s: a script URL in %s", what, m[0])
	}
	for _, bad := range []string{"\x1b", "\x07", "\u202e"} {
		assert.NotContains(t, body, bad, "%s sends %q", what, bad)
	}
	assert.True(t, utf8.ValidString(body), "%s is valid UTF-8", what)
	assert.Equal(t, 1, strings.Count(strings.ToLower(body), "<script"), "%s: one script element, ours", what)
	assert.Contains(t, body, `<script src="/static/ui.js" defer></script>`)
}

func TestHostileSessionIsShownEscaped(t *testing.T) {
	s, _ := hostileStore(t)
	resp, body := s.get(t, "/")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	noActiveContent(t, body, "the list")
	assert.Contains(t, body, "team=&lt;script&gt;alert(&#39;label&#39;)&lt;/script&gt;")

	resp, body = s.get(t, "/s/evil")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	noActiveContent(t, body, "the session")

	resp, body = s.get(t, "/s/evil/c/claude/"+hostileConv)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	noActiveContent(t, body, "the conversation")
	assert.Contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt;")
	assert.Contains(t, body, "[click](javascript:alert(2))", "shown as text, not a link")
	assert.Contains(t, body, `\x1b[31mred`, "escapes shown, not sent")
	assert.Contains(t, body, "bad \uFFFD", "invalid UTF-8 replaced")
	assert.Contains(t, body, "after the big line", "the 50 MB line left out, what follows shown")
	assert.NotContains(t, body, strings.Repeat("A", 1<<20))
	assert.Contains(t, body, `id="e1"`)
	assert.Equal(t, 7, entryCount(body))
	assert.Len(t, regexp.MustCompile(`id="e[0-9]+"`).FindAllString(body, -1), 7, "every entry has its anchor")
}

func TestWorkspaceShowsNothingOutsideTheSession(t *testing.T) {
	s, secret := hostileStore(t)
	resp, body := s.get(t, "/s/evil/w/")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	noActiveContent(t, body, "the workspace")
	assert.Contains(t, body, `id="workspace"`)
	assert.Contains(t, body, "secret-link")
	assert.NotContains(t, body, `href="/s/evil/w/secret-link"`, "a symlink is not a link")
	for _, p := range []string{"/s/evil/w/secret-link", "/s/evil/w/root-link/etc/passwd", "/s/evil/w/root-link/", "/s/evil/w/../../../" + secret,
		"/s/evil/w/%2e%2e/%2e%2e/session.json", "/s/evil/w/..%2f..%2fsession.json", "/s/evil/w/" + secret} {
		resp, body := s.get(t, p)
		assert.NotEqual(t, http.StatusOK, resp.StatusCode, p)
		assert.NotContains(t, body, "HOST-SECRET", p)
		assert.NotContains(t, body, "root:x:0", p)
	}
	resp, body = s.get(t, "/s/evil/w/page.html")
	assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	assert.Contains(t, body, "<script>alert(7)", "served as the text it is")
	resp, _ = s.get(t, "/s/evil/w/image.svg")
	assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"), "an SVG is text, never an image that runs script")
	resp, body = s.get(t, "/s/evil/w/bad.txt")
	assert.Equal(t, "ok \uFFFD then", body)
	resp, body = s.get(t, "/s/evil/w/blob.bin")
	assert.Equal(t, "application/octet-stream", resp.Header.Get("Content-Type"))
	assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment"))
	assert.Equal(t, "\x00\x01<script>", body)
}

func TestWorkspaceFileIsCutAtMaxFileView(t *testing.T) {
	st := newStore(t)
	dir := newSession(t, st, "big", nil)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "workspace", "huge.log"), []byte(strings.Repeat("é", MaxFileView)), 0o644))
	s := serve(t, st)
	resp, body := s.get(t, "/s/big/w/huge.log")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Less(t, len(body), MaxFileView+200)
	assert.True(t, utf8.ValidString(body))
	assert.NotContains(t, body, "\uFFFD", "a rune cut at the bound is dropped, not replaced")
	assert.Contains(t, body, "the first 4194304 bytes of 8388608 are shown")
}

func TestWorkspaceSymlinkedAwayIsNotFollowed(t *testing.T) {
	st := newStore(t)
	dir := newSession(t, st, "moved", nil)
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("HOST-SECRET-77"), 0o600))
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "workspace")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "workspace")))
	s := serve(t, st)
	for _, p := range []string{"/s/moved/w/", "/s/moved/w/secret.txt"} {
		resp, body := s.get(t, p)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, p)
		assert.NotContains(t, body, "HOST-SECRET", p)
		assert.NotContains(t, body, "secret.txt", p)
	}
}

func TestDamagedSessionStillShows(t *testing.T) {
	st := newStore(t)
	dir := newSession(t, st, "broken", nil)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "session.json"), []byte("<script>not json"), 0o644))
	s := serve(t, st)
	resp, body := s.get(t, "/")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, `<tr data-session="broken">`)
	assert.Contains(t, body, `class="damaged"`)
	noActiveContent(t, body, "the list")
	resp, body = s.get(t, "/s/broken")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, "<dt>damaged</dt>")
	assert.Contains(t, body, `href="/s/broken/w/"`)
	noActiveContent(t, body, "the session")
}
