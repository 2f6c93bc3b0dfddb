package ui

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/sessionfs/sessionfs/agents/text"
)

// maxCSPReport bounds what is read of a report: it needs no token, so anyone who reaches the port may send one.
const maxCSPReport = 16 << 10

// maxCSPLogged is how many reports are logged: anyone may send them, the log is not theirs to fill.
const maxCSPLogged = 100

// cspReport logs a report of the browser's about something the policy blocked, and counts it: a page that breaks
// the policy is a bug of ours or an attack of a session's.
func (s *Server) cspReport(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(io.LimitReader(r.Body, maxCSPReport))
	switch n := s.cspReports.Add(1); {
	case n <= maxCSPLogged:
		s.o.Log.Printf("ui: CSP report: %s", text.OneLine(string(b), 2000))
	case n == maxCSPLogged+1:
		s.o.Log.Printf("ui: more CSP reports: counted (/debug/csp-reports), no longer logged")
	}
	w.WriteHeader(http.StatusNoContent)
}

// cspCount answers {"count":N}, the reports received.
func (s *Server) cspCount(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]int64{"count": s.cspReports.Load()})
}
