package ui

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBaseScopesTheCookie: with a Base, every route, link and the cookie's Path are beneath it, and nothing
// outside it is served: a browser sends the cookie to no other path of the host, on any of its ports (another
// port's server, a session's dev server, is sent none).
func TestBaseScopesTheCookie(t *testing.T) {
	const b = "/ui-0123456789abcdef"
	st := newStore(t)
	dir := newSession(t, st, "s1", nil)
	transcript(t, dir, hostileConv)
	ts := httptest.NewUnstartedServer(nil)
	s, err := New(Options{Store: st, Addr: ts.Listener.Addr().String(), Token: testToken, Base: b})
	require.NoError(t, err)
	t.Cleanup(func() { base = "" })
	ts.Config.Handler = s
	ts.Start()
	t.Cleanup(ts.Close)
	assert.Equal(t, "http://"+ts.Listener.Addr().String()+b+"/?token="+testToken, s.URL())

	resp, err := noRedirect.Get(ts.URL + "/?token=" + testToken)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "outside the base: nothing, no cookie")
	assert.Empty(t, resp.Cookies())

	resp, err = noRedirect.Get(s.URL())
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, b+"/", resp.Header.Get("Location"))
	require.Len(t, resp.Cookies(), 1)
	assert.Equal(t, b+"/", resp.Cookies()[0].Path, "the cookie is sent beneath the base only")

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err = c.Get(s.URL())
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	get := func(p string) (*http.Response, string) {
		resp, err := c.Get(ts.URL + p)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	for _, p := range []string{b + "/", b + "/s/s1", b + "/s/s1/c/claude/" + hostileConv, b + "/s/s1/w/", b + "/search?q=x"} {
		resp, body := get(p)
		require.Equal(t, http.StatusOK, resp.StatusCode, p)
		assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "report-uri "+b+"/csp-report")
		links := regexp.MustCompile(`(?:href|src|action|data-live|data-events)="(/[^"]*)"`).FindAllStringSubmatch(body, -1)
		assert.NotEmpty(t, links, p)
		for _, l := range links {
			assert.Regexp(t, "^"+regexp.QuoteMeta(b)+"/", l[1], "%s links outside the base", p)
		}
	}
	resp, _ = get("/s/s1")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "a route outside the base, with the cookie jar")
	resp, _ = get(b + "/s/s1/w")
	assert.Equal(t, b+"/s/s1/w/", resp.Request.URL.Path, "a redirect stays beneath the base")
}
