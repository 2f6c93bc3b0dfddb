package ui

import (
	"bytes"
	"embed"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/sessionfs/sessionfs/agents/text"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static/ui.css static/ui.js
var staticFiles embed.FS

// pages are the templates: html/template escapes every value for where it lands; no session's text is ever
// template.HTML. Parsed at their first use, not at the start of every sessionfs command (3-6 ms of each `ls`).
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(template.FuncMap{"base": func() string { return base }}).
		ParseFS(templateFiles, "templates/*.html"))
})

// base is the path every route is served under (Options.Base): New sets it, a process serves one Server.
var base string

// page is what every page's head shows.
type page struct {
	Title string
	Query string // the search box's text
}

// Bounds of what a page shows of a session's strings.
const (
	maxName  = 200  // an id, a label, a host, a file's name
	maxTitle = 160  // a conversation's first prompt as its title
	maxLine  = 2000 // a command, a cwd
)

// one is a session's string made one safe line of at most n bytes (control characters shown, not sent).
func one(s string, n int) string { return text.OneLine(s, n) }

// when is t for a person, "-" when unknown.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04")
}

// iso is t for a datetime attribute, "" when unknown.
func iso(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func size(n int64) string {
	if n < 0 {
		n = 0
	}
	return humanize.IBytes(uint64(n))
}

// href joins path segments, each escaped: a name from a session (a conversation's id, a file's) never makes a
// query, a fragment or another path.
func href(segs ...string) string {
	var b strings.Builder
	b.WriteString(base)
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// render writes template name with data as a whole page: rendered first, so that an error is a 500, not half a
// page.
func (s *Server) render(w http.ResponseWriter, status int, name string, data any) {
	var b bytes.Buffer
	if err := pages().ExecuteTemplate(&b, name, data); err != nil {
		s.o.Log.Printf("ui: rendering %s: %v", name, err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// errorPage answers status with a page that says msg.
func (s *Server) errorPage(w http.ResponseWriter, status int, msg string) {
	s.render(w, status, "error", struct {
		page
		Message string
	}{page{Title: http.StatusText(status)}, msg})
}

// static serves the embedded assets.
func (s *Server) static(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	b, err := staticFiles.ReadFile("static/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	switch {
	case strings.HasSuffix(name, ".css"):
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case strings.HasSuffix(name, ".js"):
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	}
	w.Header().Set("Cache-Control", "private, max-age=300")
	_, _ = w.Write(b)
}
