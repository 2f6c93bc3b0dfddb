package ui

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"sync/atomic"

	"github.com/sessionfs/sessionfs/layout"
)

// Options are what a Server serves and how.
type Options struct {
	Store *layout.Store
	// Addr is the address the server listens on (host:port, the port the one it got): the Host headers it takes.
	Addr string
	// Token is the secret every request needs (NewToken makes one).
	Token string
	// Log is where panics, CSP reports and errors go (nil: the standard logger).
	Log *log.Logger
	// Command is how a resume command names sessionfs and its store ("sessionfs --store '/x'", or "sessionfs"
	// for the default store).
	Command string
	// Docker is what a resume command in a container needs after "--backend docker" (its image, unless
	// config.toml names one; the key's variable): "" offers none. Modal offers Claude's run on Modal, for a
	// set-up whose config.toml names a Modal image.
	Docker string
	Modal  bool
	// Base is the path every route is served under ("": /), and the cookie's Path. sessionfs ui gives a random one
	// (NewBase): a browser sends a host's cookies to each of its ports (a cookie's host has none), so with Path=/
	// a session's dev server on another port of 127.0.0.1, opened in the same browser, was sent the token. A
	// process serves one Server (the pages' links are made with the last New's Base).
	Base string
}

// Server is sessionfs ui's HTTP handler.
type Server struct {
	o          Options
	mux        *http.ServeMux
	hosts      map[string]bool // the Host headers taken (lower case); anyIP: any IP literal with the port
	anyIP      bool
	port       string
	cookie     string
	cspReports atomic.Int64
}

// NewToken is a random 128-bit token, as hex.
func NewToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// NewBase is a random Options.Base: /ui- and 64 random bits, as hex.
func NewBase() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "/ui-" + hex.EncodeToString(b[:]), nil
}

// New makes the server of o; o.Addr must be the address listened on, with its port.
func New(o Options) (*Server, error) {
	if o.Store == nil || o.Token == "" {
		return nil, fmt.Errorf("ui: a store and a token are needed")
	}
	if o.Base != "" && (!strings.HasPrefix(o.Base, "/") || strings.HasSuffix(o.Base, "/") || url.PathEscape(o.Base[1:]) != o.Base[1:]) {
		return nil, fmt.Errorf("ui: base %q is not one path segment as /name", o.Base)
	}
	base = o.Base
	if o.Log == nil {
		o.Log = log.Default()
	}
	if o.Command == "" {
		o.Command = "sessionfs"
	}
	host, port, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("ui: listen address %q: %w", o.Addr, err)
	}
	s := &Server{o: o, port: port, hosts: map[string]bool{}, cookie: "sessionfs_ui_" + port}
	s.hosts[strings.ToLower(net.JoinHostPort(host, port))] = true
	ip := net.ParseIP(host)
	if ip != nil && (ip.IsLoopback() || ip.IsUnspecified()) {
		for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
			s.hosts[net.JoinHostPort(h, port)] = true
		}
	}
	// Listening everywhere, the server is reached by any of the host's addresses: an IP literal cannot be
	// rebound by DNS, a name can.
	s.anyIP = ip != nil && ip.IsUnspecified()
	s.routes()
	return s, nil
}

// URL is the address to open, with the token.
func (s *Server) URL() string {
	addr := s.o.Addr
	if host, port, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			addr = net.JoinHostPort("127.0.0.1", port) // listening everywhere: here too
		}
	}
	return "http://" + addr + s.o.Base + "/?token=" + s.o.Token
}

// Loopback reports whether addr (host:port) listens on a loopback address only.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", s.list)
	m.HandleFunc("GET /s/{id}", s.session)
	m.HandleFunc("GET /s/{id}/c/{agent}/{conv}", s.conversation)
	m.HandleFunc("GET /s/{id}/c/{agent}/{conv}/events", s.conversationEvents)
	m.HandleFunc("GET /s/{id}/w", s.workspaceRedirect)
	m.HandleFunc("GET /s/{id}/w/{path...}", s.workspace)
	m.HandleFunc("GET /search", s.search)
	m.HandleFunc("GET /events", s.storeEvents)
	m.HandleFunc("POST /csp-report", s.cspReport)
	m.HandleFunc("GET /debug/csp-reports", s.cspCount)
	m.HandleFunc("GET /static/{name}", s.static)
	s.mux = m
}

// csp allows this origin's script, style and images only, and nothing inline (its reports go beneath Base).
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'; report-uri /csp-report"

// ServeHTTP sets the safety headers of every answer, checks the Host and the token, and recovers from a panic.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", strings.Replace(csp, "report-uri /", "report-uri "+s.o.Base+"/", 1))
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.o.Log.Printf("ui: panic serving %s: %v\n%s", r.URL.Path, v, debug.Stack())
			http.Error(w, "internal error (the server's log says what)", http.StatusInternalServerError)
		}
	}()
	if !s.hostAllowed(r.Host) {
		http.Error(w, "forbidden: this server answers to "+s.o.Addr+" only", http.StatusForbidden)
		return
	}
	if s.o.Base != "" {
		// Beneath Base only: what the browser sends elsewhere on this host carries no cookie of ours.
		rest, ok := strings.CutPrefix(r.URL.Path, s.o.Base)
		if !ok || !strings.HasPrefix(rest, "/") {
			http.Error(w, "not found: open the URL sessionfs ui printed", http.StatusNotFound)
			return
		}
		r2 := *r
		u := *r.URL
		u.Path, u.RawPath = rest, strings.TrimPrefix(r.URL.RawPath, s.o.Base)
		r2.URL = &u
		r = &r2
	}
	if r.Method == http.MethodPost && r.URL.Path == "/csp-report" {
		s.mux.ServeHTTP(w, r)
		return
	}
	if !s.authorized(w, r) {
		return
	}
	s.mux.ServeHTTP(w, r)
}

// hostAllowed is the DNS-rebinding check: a page of another site whose name was made to point here sends its own
// name as Host.
func (s *Server) hostAllowed(host string) bool {
	host = strings.ToLower(host)
	if s.hosts[host] {
		return true
	}
	if s.anyIP {
		h, port, err := net.SplitHostPort(host)
		return err == nil && port == s.port && net.ParseIP(h) != nil
	}
	return false
}
