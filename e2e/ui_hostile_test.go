package e2e

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUIHostileSessionRunsNothing: a session written to attack whoever looks at it (ui_fixtures_test.go's
// hostileSession: markup and script in prompts, replies, tool calls and results, javascript: links, an SVG and
// an HTML file with script in the workspace, terminal escapes, a line of 50 MB, links out of the session to a host
// secret, a FIFO, invalid UTF-8) is visited page by page in chromium: no dialog opens, no request leaves the ui's
// origin (a server of another origin counts what reaches it), the browser blocks nothing (what the pages hold is
// text, so the Content-Security-Policy has nothing to stop: no violation in the browser's log nor at
// /debug/csp-reports), the host secret's text is on no page, and the workspace's SVG and HTML come as text or a
// download, never as a document of the ui's origin. Controls first show each detector sees what it should.
func TestUIHostileSessionRunsNothing(t *testing.T) {
	var mu sync.Mutex
	var foreignHits []string
	foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		foreignHits = append(foreignHits, r.Method+" "+r.URL.String())
		mu.Unlock()
	}))
	t.Cleanup(foreign.Close)
	store := t.TempDir()
	secret := hostSecret(t)
	uuid := hostileSession(t, store, foreign.URL, secret)
	u := startUI(t, store)
	b := newBrowser(t)
	b.login(t, u)

	// Controls: a dialog opened by the tools (not the page) is seen; an inline script added to the page is blocked
	// by the CSP, reported to the server and logged by the browser.
	eval[chromedp.Void](t, b, `alert('control')`)
	eval[chromedp.Void](t, b, `document.body.appendChild(Object.assign(document.createElement('script'), {textContent: "alert('inline-control')"}))`)
	eventually(t, 10*time.Second, func() bool { return u.cspReports(t) == 1 }, "the control's CSP violation never reached /debug/csp-reports")
	dialogs, _, blocked := b.seen()
	require.Equal(t, []string{"alert: control"}, dialogs, "the control's dialog, and only it")
	require.Len(t, blocked, 1, "the control's inline script blocked: %v", blocked)
	b.forget()

	// The pages: the session's, each conversation, the workspace and each of its files (named here too, so none is
	// missed for want of a link), searches whose hits show the payloads and one whose query is a payload; then every
	// link they hold inside the session.
	seeds := []string{"/", "/s/evil", "/s/evil/c/claude/" + uuid, "/s/evil/c/claude/6e0c5a1b-0bad-4bad-8bad-0000000000e2",
		"/s/evil/c/claude/" + (&url.URL{Path: `<img src=x onerror=alert('conversation-name')>`}).EscapedPath(),
		"/s/evil/w/", "/s/evil/w/sub/", "/s/evil/w/leak-dir/",
		"/search?q=alert", "/search?q=script", "/search?q=" + url.QueryEscape(`<script>alert('query')</script>`),
		"/search?q=" + url.QueryEscape(`"><img src=x onerror=alert('query-attr')>`)}
	for _, name := range []string{"evil.svg", "evil.html", "evil.xhtml", "page.txt", `<img src=x onerror=alert('file-name')>`,
		`javascript:alert('file-name-link')`, "escapes.txt", "invalid-utf8.txt", "binary.dat", "leak", "leak-dir",
		"leak-dir/secret", "sub/up", "proc-root", "fifo"} {
		seeds = append(seeds, "/s/evil/w/"+(&url.URL{Path: name}).EscapedPath())
	}
	visited := crawlHostile(t, b, u, seeds, "/s/evil")
	t.Logf("visited %d pages: %q", len(visited), slices.Sorted(maps.Keys(visited)))

	assert.Contains(t, visited["/s/evil"], `<img src=x onerror=alert('conversation-name')>`, "the conversation named as markup is listed, as text")
	conv, ok := visited["/s/evil/c/claude/"+uuid]
	require.True(t, ok, "the hostile conversation was visited")
	assert.Contains(t, conv, `<script>alert('script-tag')</script>`, "the payload is shown as text")
	assert.Contains(t, conv, "the last words of the hostile conversation", "read past the 50 MB line")
	for _, c := range []string{"\x1b", "\x07", "\u009b", "\x00", "\u202e"} {
		assert.NotContains(t, conv, c, "a control character is shown visibly, never as itself (%q)", c)
	}
	for _, name := range []string{"evil.svg", "evil.html", "evil.xhtml"} {
		resp, body := u.get(t, "/s/evil/w/"+name)
		ct, cd := resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition")
		t.Logf("%s: %d, Content-Type %q, Content-Disposition %q", name, resp.StatusCode, ct, cd)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s is served: %s", name, body)
		assert.True(t, strings.HasPrefix(ct, "text/plain") || strings.HasPrefix(cd, "attachment"),
			"%s is served as text or as a download, never as a document (Content-Type %q)", name, ct)
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), name)
	}

	dialogs, _, blocked = b.seen()
	assert.Empty(t, dialogs, "a page of the hostile session opened a dialog")
	assert.Empty(t, b.foreignRequests(u.base), "a page of the hostile session made a request to another origin (the ui is %s, the other origin %s)", u.base, foreign.URL)
	assert.Empty(t, blocked, "the browser blocked something: a page held more than text")
	mu.Lock()
	assert.Empty(t, foreignHits, "requests reached the other origin")
	mu.Unlock()
	assert.Equal(t, 1, u.cspReports(t), "CSP reports beyond the control's")
	assertSecretUntouched(t, secret)
}

// crawlHostile visits each seed and each link it finds under scope, in the browser when the server answers a page
// or text (a download is checked outside it), and returns each visited page's visible text by path. On every
// answer: the CSP header and nosniff, the host secret's text nowhere; on every page: no inline script, no script,
// frame, object, base or refresh of the session's making, no javascript: URL in an attribute.
func crawlHostile(t *testing.T, b *browser, u *uiServer, seeds []string, scope string) map[string]string {
	t.Helper()
	visited := map[string]string{}
	queue := append([]string(nil), seeds...)
	for len(queue) > 0 && len(visited) < 400 {
		p := queue[0]
		queue = queue[1:]
		if _, done := visited[p]; done {
			continue
		}
		visited[p] = ""
		resp, body := u.get(t, p)
		require.NotContains(t, string(body), hostMarker, "GET %s showed the host secret", p)
		assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'", "GET %s: its CSP", p)
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), "GET %s", p)
		ct := resp.Header.Get("Content-Type")
		if strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") || resp.StatusCode != http.StatusOK {
			continue
		}
		require.True(t, strings.HasPrefix(ct, "text/html") || strings.HasPrefix(ct, "text/plain"), "GET %s: Content-Type %q", p, ct)
		b.visit(t, u, p)
		html := b.html(t)
		require.NotContains(t, html, hostMarker, "%s showed the host secret", p)
		visited[p] = b.text(t)
		if !strings.HasPrefix(ct, "text/html") {
			assert.Equal(t, "text/plain", eval[string](t, b, `document.contentType`), "%s is text in the browser", p)
			continue
		}
		bad := eval[[]string](t, b, `(() => {
			const bad = [];
			for (const s of document.querySelectorAll('script')) {
				if (!s.src || new URL(s.src).origin !== location.origin) bad.push('script: ' + s.outerHTML.slice(0, 200));
			}
			for (const e of document.querySelectorAll('iframe, frame, object, embed, base, meta[http-equiv], link[rel~=import]')) {
				bad.push(e.tagName + ': ' + e.outerHTML.slice(0, 200));
			}
			for (const e of document.querySelectorAll('*')) {
				for (const a of e.attributes) {
					if (/^\s*(javascript|vbscript|data):/i.test(a.value) || /^on/i.test(a.name)) bad.push(e.tagName + ' ' + a.name + '=' + a.value.slice(0, 200));
				}
			}
			return bad;
		})()`)
		assert.Empty(t, bad, "%s holds markup of the session's making", p)
		links := eval[[]string](t, b, `[...document.querySelectorAll('a[href]')].map(a => a.href)`)
		for _, l := range links {
			lu, err := url.Parse(l)
			if err != nil {
				continue
			}
			lu.Fragment = ""
			if rel, in := strings.CutPrefix(lu.String(), u.base); in && strings.HasPrefix(rel, scope) {
				queue = append(queue, rel)
			}
		}
	}
	return visited
}
