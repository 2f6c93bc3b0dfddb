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
	ents, total, err := listBeneath(ws, rel, maxListing)
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
	if total > len(ents) {
		p.More = fmt.Sprintf("%d more names are not shown.", total-len(ents))
	}
	for _, e := range ents {
		child := append(slices.Clip(parts), e.name)
		ent := wsEntry{Name: one(e.name, maxName)}
		switch e.mode & unix.S_IFMT {
		case unix.S_IFDIR:
			ent.Class, ent.Href = "dir", wsHref(id, child)+"/"
		case unix.S_IFREG:
			ent.Class, ent.Href, ent.Note = "file", wsHref(id, child), size(e.size)
		case unix.S_IFLNK:
			ent.Class, ent.Note = "link", "symlink, not followed"
		default:
			ent.Class, ent.Note = "special", "not a regular file"
		}
		p.Entries = append(p.Entries, ent)
	}
	s.render(w, http.StatusOK, "workspace", p)
}

// wsName is a name of a workspace folder, as fstatat saw it.
type wsName struct {
	name string
	mode uint32
	size int64
}

// listBeneath lists folder rel beneath d: at most limit names (the first by name), folders first, each stated by
// fstatat on the folder's descriptor without following it, and how many names it holds. Not os.DirEntry.Info:
// it stats the name joined to the path the folder was opened by, which for a folder opened by descriptor is no
// path of it ("/etc" for a file "etc" of the top folder).
func listBeneath(d *layout.Dir, rel string, limit int) (list []wsName, total int, err error) {
	fd, err := d.OpenAt(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, 0, err
	}
	f := os.NewFile(uintptr(fd), "workspace folder")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, 0, err
	}
	total = len(names)
	if len(names) > limit {
		slices.Sort(names)
		names = names[:limit]
	}
	out := make([]wsName, 0, len(names))
	for _, name := range names {
		var st unix.Stat_t
		if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue // gone since
		}
		out = append(out, wsName{name: name, mode: st.Mode, size: st.Size})
	}
	slices.SortFunc(out, func(a, b wsName) int {
		if ad, bd := a.mode&unix.S_IFMT == unix.S_IFDIR, b.mode&unix.S_IFMT == unix.S_IFDIR; ad != bd {
			if ad {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	return out, total, nil
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
