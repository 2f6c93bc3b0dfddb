// Package stubserver is what the agents' API stubs (geministub, openaistub) share: an HTTP server on a local
// address that notes each request's method and path, for a test's failure message, before its stub answers it.
package stubserver

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Server is a running stub. Requests counts the model calls its stub answered.
type Server struct {
	URL      string // the base URL clients take
	Requests atomic.Int64
	srv      *http.Server

	mu    sync.Mutex
	paths []string // every request's method and path
}

// Start listens on addr ("127.0.0.1:0" for the loopback) and answers each request with serve once it is noted.
// URL is the listener's address followed by base ("/v1", or "" for none).
func Start(addr, base string, serve func(*Server, http.ResponseWriter, *http.Request)) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + ln.Addr().String() + base}
	handler := func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.paths = append(s.paths, r.Method+" "+r.URL.Path)
		s.mu.Unlock()
		serve(s, w, r)
	}
	s.srv = &http.Server{Handler: http.HandlerFunc(handler), ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the stub.
func (s *Server) Close() error { return s.srv.Close() }

// Paths lists the requests seen so far ("POST /v1/responses").
func (s *Server) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths...)
}
