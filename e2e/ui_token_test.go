package e2e

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUITokenRequired: every page of sessionfs ui is 403 without the token of the URL it printed (or the cookie it
// trades it for) and with a wrong one; with it, 200; a Host header other than its address (a DNS-rebinding page
// of another name that resolves to 127.0.0.1) is 403 even with the token.
func TestUITokenRequired(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	u := startUI(t, store)
	paths := []string{"/", "/s/s1", "/s/s1/w/", "/search?q=x", "/debug/csp-reports", "/events", "/static/ui.js"}
	for _, p := range paths {
		resp, body := httpGet(t, u.base+p, nil)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, "GET %s without the token: %s", p, body)
		resp, body = httpGet(t, u.base+withQuery(p, "token", strings.Repeat("0", len(u.token))), nil)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, "GET %s with a wrong token: %s", p, body)
		resp, body = httpGet(t, u.base+p, func(r *http.Request) {
			r.AddCookie(&http.Cookie{Name: u.cookie.Name, Value: strings.Repeat("0", len(u.cookie.Value))})
		})
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, "GET %s with a wrong cookie: %s", p, body)
	}
	for _, p := range []string{"/", "/s/s1", "/s/s1/w/", "/search?q=x", "/debug/csp-reports"} {
		resp, body := u.get(t, p)
		assert.Equal(t, http.StatusOK, resp.StatusCode, "GET %s with the token's cookie: %s", p, body)
		resp, body = u.get(t, p, func(r *http.Request) { r.Host = "rebind.example:" + portOf(t, u.base) })
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, "GET %s with another Host: %s", p, body)
	}
	resp, _ := httpGet(t, u.url, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the printed URL")
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	assert.Empty(t, loc.Query().Get("token"), "the redirect drops the token from the URL")
	resp, _ = httpGet(t, u.url, func(r *http.Request) { r.Host = "rebind.example:" + portOf(t, u.base) })
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "the printed URL with another Host")
}

func withQuery(p, k, v string) string {
	sep := "?"
	if strings.Contains(p, "?") {
		sep = "&"
	}
	return p + sep + k + "=" + url.QueryEscape(v)
}

func portOf(t *testing.T, base string) string {
	t.Helper()
	p, err := url.Parse(base)
	require.NoError(t, err)
	return p.Port()
}
