package ui

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
)

// Bounds of what the workspace shows.
const (
	// MaxFileView is how much of a text file is shown: a larger one is cut there, a notice saying so.
	MaxFileView = 4 << 20
	// MaxDownload is how much of a binary file is sent as a download.
	MaxDownload = 1 << 30
	// maxListing is how many names of a folder are shown.
	maxListing = 5000
	// sniffLen is how much of a file decides whether it is text (no NUL in it, as git decides).
	sniffLen = 8000
)

type workspacePage struct {
	page
	Session, SessionHref, Path, Up, More string
	Crumbs                               []crumb
	Entries                              []wsEntry
}

type crumb struct{ Name, Href string }

type wsEntry struct{ Name, Href, Class, Note string }

// workspaceRedirect sends /s/<id>/w to the workspace's root folder.
func (s *Server) workspaceRedirect(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, href("s", r.PathValue("id"), "w")+"/", http.StatusMovedPermanently)
}

// workspace shows the session's workspace read-only: a folder as a page of links, a file as text or a download.
// Every name is resolved beneath the workspace's descriptor, no symlink followed (layout.Dir): a link out of the
// workspace shows nothing, whatever it points at.
func (s *Server) workspace(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var parts []string
	for _, p := range strings.Split(r.PathValue("path"), "/") {
		if p == ".." || p == "." {
			s.errorPage(w, http.StatusNotFound, "no such file in the workspace")
			return
		}
		if p != "" {
			parts = append(parts, p)
		}
	}
	rel := strings.Join(parts, "/")
	sess := s.openSession(w, id)
	if sess == nil {
		return
	}
	defer sess.Close()
	ws, err := sess.Sub("workspace")
	if err != nil {
		s.errorPage(w, http.StatusNotFound, "session "+id+" has no workspace folder (a symlink is not followed)")
		return
	}
	defer ws.Close()
	pfd, err := ws.OpenAt(rel, unix.O_PATH, 0)
	if err != nil {
		s.errorPage(w, http.StatusNotFound, "no such file or folder in the workspace (a symlink is not followed)")
		return
	}
	var st unix.Stat_t
	err = unix.Fstat(pfd, &st)
	unix.Close(pfd)
	if err != nil {
		s.errorPage(w, http.StatusNotFound, "the workspace's file could not be read")
		return
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if rel != "" && !strings.HasSuffix(r.URL.Path, "/") {
			http.Redirect(w, r, wsHref(id, parts)+"/", http.StatusMovedPermanently)
			return
		}
		s.workspaceFolder(w, id, ws, parts)
	case unix.S_IFREG:
		s.workspaceFile(w, ws, rel, parts[len(parts)-1])
	default:
		s.errorPage(w, http.StatusNotFound, "not a regular file: a FIFO, a device or a socket is not read")
	}
}

// wsHref is the workspace's page of the path parts.
func wsHref(id string, parts []string) string {
	return href(append([]string{"s", id, "w"}, parts...)...)
}

func (s *Server) workspaceFolder(w http.ResponseWriter, id string, ws *layout.Dir, parts []string) {
	rel := strings.Join(parts, "/")
	ents, err := ws.ReadDir(rel)
	if err != nil {
		s.errorPage(w, http.StatusNotFound, "the folder could not be listed")
		return
	}
	p := workspacePage{page: page{Title: "Workspace of " + id}, Session: id, SessionHref: href("s", id), Path: one(rel, maxLine)}
	for i := range parts {
		p.Crumbs = append(p.Crumbs, crumb{Name: one(parts[i], maxName), Href: wsHref(id, parts[:i+1]) + "/"})
	}
	if len(parts) > 0 {
		p.Up = wsHref(id, parts[:len(parts)-1]) + "/"
	}
	slices.SortFunc(ents, func(a, b os.DirEntry) int {
		if a.IsDir() != b.IsDir() {
			if a.IsDir() {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name(), b.Name())
	})
	if len(ents) > maxListing {
		p.More = fmt.Sprintf("%d more names are not shown.", len(ents)-maxListing)
		ents = ents[:maxListing]
	}
	for _, e := range ents {
		child := append(slices.Clip(parts), e.Name())
		ent := wsEntry{Name: one(e.Name(), maxName)}
		switch t := e.Type(); {
		case t.IsDir():
			ent.Class, ent.Href = "dir", wsHref(id, child)+"/"
		case t.IsRegular():
			ent.Class, ent.Href = "file", wsHref(id, child)
			if fi, err := e.Info(); err == nil {
				ent.Note = size(fi.Size())
			}
		case t&os.ModeSymlink != 0:
			ent.Class, ent.Note = "link", "symlink, not followed"
		default:
			ent.Class, ent.Note = "special", "not a regular file"
		}
		p.Entries = append(p.Entries, ent)
	}
	s.render(w, http.StatusOK, "workspace", p)
}

// workspaceFile sends a file as text/plain (its invalid UTF-8 replaced, at most MaxFileView) or, when it holds a
// NUL, as a download: never as HTML, whatever it holds.
func (s *Server) workspaceFile(w http.ResponseWriter, ws *layout.Dir, rel, name string) {
	f, err := ws.OpenRegular(rel, -1)
	if err != nil {
		s.errorPage(w, http.StatusNotFound, "the file could not be opened (a symlink is not followed)")
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		s.errorPage(w, http.StatusNotFound, "the file could not be read")
		return
	}
	head := make([]byte, sniffLen)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	h := w.Header()
	if bytes.IndexByte(head, 0) >= 0 {
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": strings.ToValidUTF8(name, "_")}))
		h.Set("Content-Length", strconv.FormatInt(min(fi.Size(), MaxDownload), 10))
		if _, err := w.Write(head); err == nil {
			_, _ = io.CopyN(w, f, min(fi.Size(), MaxDownload)-int64(len(head)))
		}
		return
	}
	rest := make([]byte, MaxFileView-len(head)+1)
	m, _ := io.ReadFull(f, rest)
	body := append(head, rest[:m]...)
	cut := len(body) > MaxFileView
	if cut {
		body = body[:MaxFileView]
		// A rune cut in two is dropped, not shown replaced.
		for k := 1; k < utf8.UTFMax && k <= len(body); k++ {
			if utf8.RuneStart(body[len(body)-k]) {
				if !utf8.FullRune(body[len(body)-k:]) {
					body = body[:len(body)-k]
				}
				break
			}
		}
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	out := bytes.ToValidUTF8(body, []byte("\uFFFD"))
	if cut {
		out = append(out, fmt.Sprintf("\n\n[sessionfs ui: the first %d bytes of %d are shown]\n", MaxFileView, fi.Size())...)
	}
	_, _ = w.Write(out)
}
