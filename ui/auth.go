package ui

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"
)

// authorized reports whether r carries the token (as ?token= or the cookie); it answers 403 when not. A GET with
// the token in its URL is sent on to the same URL without it, the cookie set: the token leaves the address bar
// and the history.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	q := r.URL.Query()
	if tok := q.Get("token"); tok != "" {
		if !s.tokenOK(tok) {
			http.Error(w, "forbidden: a wrong token (sessionfs ui prints the URL to open)", http.StatusForbidden)
			return false
		}
		if r.Method != http.MethodGet {
			return true
		}
		http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: s.o.Token, Path: base + "/", HttpOnly: true,
			SameSite: http.SameSiteStrictMode})
		q.Del("token")
		u := url.URL{Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: q.Encode()}
		// One slash first: "//host/x" would send the browser to another host.
		to := base + "/" + strings.TrimLeft(u.RequestURI(), "/")
		http.Redirect(w, r, to, http.StatusSeeOther)
		return false
	}
	if c, err := r.Cookie(s.cookie); err == nil && s.tokenOK(c.Value) {
		return true
	}
	http.Error(w, "forbidden: open the URL sessionfs ui printed (with its ?token=)", http.StatusForbidden)
	return false
}

func (s *Server) tokenOK(tok string) bool {
	return subtle.ConstantTimeCompare([]byte(tok), []byte(s.o.Token)) == 1
}
