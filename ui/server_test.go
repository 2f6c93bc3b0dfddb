package ui

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func TestEveryRequestNeedsTheToken(t *testing.T) {
	st := newStore(t)
	newSession(t, st, "alpha", nil)
	s := serve(t, st)
	for _, path := range []string{"/", "/s/alpha", "/s/alpha/w/", "/search?q=x", "/events", "/debug/csp-reports", "/static/ui.js", "/nothing"} {
		resp, err := noRedirect.Get(s.ts.URL + path)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, "%s without a token", path)
		resp, err = noRedirect.Get(s.ts.URL + path + sep(path) + "token=ffffffffffffffffffffffffffffffff")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, "%s with a wrong token", path)
		req, _ := http.NewRequest("GET", s.ts.URL+path, nil)
		req.AddCookie(&http.Cookie{Name: s.cookie, Value: "ffffffffffffffffffffffffffffffff"})
		resp, err = noRedirect.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, "%s with a wrong cookie", path)
	}
}

func sep(path string) string {
	if strings.Contains(path, "?") {
		return "&"
	}
	return "?"
}

func TestTheTokenBecomesACookieAndLeavesTheURL(t *testing.T) {
	s := serve(t, newStore(t))
	resp, err := noRedirect.Get(s.ts.URL + "/?sort=created&token=" + testToken)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "/?sort=created", resp.Header.Get("Location"))
	cookies := resp.Cookies()
	require.Len(t, cookies, 1)
	c := cookies[0]
	assert.Equal(t, testToken, c.Value)
	assert.True(t, c.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, c.SameSite)
	req, _ := http.NewRequest("GET", s.ts.URL+"/?sort=created", nil)
	req.AddCookie(c)
	resp, err = noRedirect.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestTheTokensRedirectStaysOnThisServer(t *testing.T) {
	s := serve(t, newStore(t))
	for _, path := range []string{"//evil.example/x", "///evil.example", "/\\evil.example"} {
		req, _ := http.NewRequest("GET", s.ts.URL+"/", nil)
		req.URL.Path, req.URL.RawQuery = path, "token="+testToken
		resp, err := noRedirect.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, path)
		loc := resp.Header.Get("Location")
		assert.True(t, strings.HasPrefix(loc, "/") && !strings.HasPrefix(loc, "//") && !strings.HasPrefix(loc, "/\\"), "%s sent to %s", path, loc)
	}
}

func TestHostHeaderOfAnotherNameIsRefused(t *testing.T) {
	s := serve(t, newStore(t))
	_, port, _ := strings.Cut(s.o.Addr, ":")
	for host, want := range map[string]int{
		"evil.example:" + port: http.StatusForbidden, // DNS rebinding: the attacker's name, pointed here
		"evil.example":         http.StatusForbidden,
		"127.0.0.1:1":          http.StatusForbidden,
		"localhost:" + port:    http.StatusOK,
		"127.0.0.1:" + port:    http.StatusOK,
		"LOCALHOST:" + port:    http.StatusOK,
	} {
		req, _ := http.NewRequest("GET", s.ts.URL+"/", nil)
		req.Host = host
		req.AddCookie(&http.Cookie{Name: s.cookie, Value: testToken})
		resp, err := noRedirect.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, want, resp.StatusCode, "Host: %s", host)
	}
}

func TestHostOfAServerListeningEverywhere(t *testing.T) {
	s, err := New(Options{Store: newStore(t), Addr: "0.0.0.0:8080", Token: testToken})
	require.NoError(t, err)
	assert.True(t, s.hostAllowed("192.0.2.7:8080"), "any address of the host")
	assert.True(t, s.hostAllowed("[2001:db8::1]:8080"))
	assert.False(t, s.hostAllowed("evil.example:8080"), "a name can be rebound")
	assert.False(t, s.hostAllowed("192.0.2.7:9090"))
	assert.False(t, Loopback("0.0.0.0:8080"))
	assert.True(t, Loopback("127.0.0.1:0"))
	assert.True(t, Loopback("[::1]:0"))
}

func TestSafetyHeadersOnEveryAnswer(t *testing.T) {
	st := newStore(t)
	newSession(t, st, "alpha", nil)
	s := serve(t, st)
	paths := []string{"/", "/s/alpha", "/s/missing", "/s/alpha/w/", "/static/ui.css", "/search?q=", "/debug/csp-reports"}
	check := func(resp *http.Response, what string) {
		assert.Equal(t, csp, resp.Header.Get("Content-Security-Policy"), what)
		assert.Equal(t, "no-referrer", resp.Header.Get("Referrer-Policy"), what)
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), what)
	}
	for _, p := range paths {
		resp, _ := s.get(t, p)
		check(resp, p)
		resp, err := noRedirect.Get(s.ts.URL + p) // 403
		require.NoError(t, err)
		resp.Body.Close()
		check(resp, p+" (403)")
	}
	assert.Contains(t, csp, "default-src 'none'")
	assert.Contains(t, csp, "script-src 'self';")
	assert.Contains(t, csp, "report-uri /csp-report")
	assert.NotContains(t, csp, "unsafe")
}

func TestCSPReportsAreCounted(t *testing.T) {
	s := serve(t, newStore(t))
	_, body := s.get(t, "/debug/csp-reports")
	assert.JSONEq(t, `{"count":0}`, body)
	// The browser sends reports without the cookie: they need no token.
	resp, err := http.Post(s.ts.URL+"/csp-report", "application/csp-report", strings.NewReader(`{"csp-report":{"blocked-uri":"inline"}}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	_, body = s.get(t, "/debug/csp-reports")
	assert.JSONEq(t, `{"count":1}`, body)
}

func TestAPanicIsA500(t *testing.T) {
	s := serve(t, newStore(t))
	var logged strings.Builder
	s.o.Log.SetOutput(&logged)
	s.mux.HandleFunc("GET /boom", func(http.ResponseWriter, *http.Request) { panic("a session's input") })
	resp, body := s.get(t, "/boom")
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.NotContains(t, body, "a session's input", "the panic is logged, not shown")
	assert.Contains(t, logged.String(), "a session's input")
	assert.Equal(t, csp, resp.Header.Get("Content-Security-Policy"))
}

func TestNothingChangesTheStore(t *testing.T) {
	s := serve(t, newStore(t))
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
		req, _ := http.NewRequest(m, s.ts.URL+"/s/alpha", nil)
		resp, err := s.client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, m)
	}
}

func TestResumeCommandsAreQuoted(t *testing.T) {
	s := &Server{o: Options{Command: "sessionfs --store '/my store'"}}
	for id, want := range map[string]string{
		"2fe2d21b-be8f-4b12-b46b-12e68f6e9f01": "sessionfs --store '/my store' resume alpha 2fe2d21b-be8f-4b12-b46b-12e68f6e9f01",
		"x; rm -rf ~":                          "sessionfs --store '/my store' resume alpha 'x; rm -rf ~'",
		"it's $(id)":                           `sessionfs --store '/my store' resume alpha 'it'\''s $(id)'`,
	} {
		cmds := s.resumeCommands("alpha", convOf("claude", id))
		require.NotEmpty(t, cmds)
		assert.Equal(t, want, cmds[0].Line)
	}
	assert.Empty(t, s.resumeCommands("alpha", convOf("claude", "x\x1b]52;c;aGk=\x07")), "no command a terminal would be given escapes to paste")
}

func TestPagesAnsweredAtOnce(t *testing.T) {
	st := newStore(t)
	dir := newSession(t, st, "busy", map[string]string{"team": "web"})
	const conv = "66666666-0000-4000-8000-000000000001"
	appendFile(t, transcript(t, dir, conv), claudeLine(conv, "user", "a walrus prompt", 1)+claudeLine(conv, "assistant", "a reply", 2))
	s := serve(t, st)
	paths := []string{"/", "/?sort=size", "/s/busy", "/s/busy/c/claude/" + conv, "/s/busy/w/", "/search?q=walrus"}
	errs := make(chan string, 64)
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 12 {
				p := paths[(g+i)%len(paths)]
				resp, err := s.client.Get(s.ts.URL + p)
				if err != nil {
					errs <- p + ": " + err.Error()
					continue
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					errs <- p + ": " + resp.Status
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// The page offers a container's and Modal's commands only where the set-up can run them (cmd/sessionfs's
// resumeSetUp says which), and names the store only when it is not the default one.
func TestResumeCommandsOfTheSetUp(t *testing.T) {
	const id = "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01"
	lines := func(o Options) []string {
		var out []string
		for _, c := range (&Server{o: o}).resumeCommands("alpha", convOf("claude", id)) {
			out = append(out, c.Where+": "+c.Line)
		}
		return out
	}
	assert.Equal(t, []string{"host: sessionfs resume alpha " + id}, lines(Options{Command: "sessionfs"}))
	assert.Equal(t, []string{
		"host: sessionfs resume alpha " + id,
		"docker: sessionfs resume alpha " + id + " --backend docker --image sessionfs-agent -e ANTHROPIC_API_KEY",
		"Modal: sessionfs run --backend modal alpha claude --resume " + id + " -p 'carry on'",
	}, lines(Options{Command: "sessionfs", Docker: "--image sessionfs-agent -e ANTHROPIC_API_KEY", Modal: true}))
}
