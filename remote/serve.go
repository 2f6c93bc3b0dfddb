package remote

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
)

// Serve answers sftp on rw for session id of store (made if the store has none): what "sessionfs sync" runs on
// the other machine when sessionfs is installed there (sessionfs sync-serve). Unlike OpenSSH's sftp-server, every
// request is resolved beneath the session folder's descriptor and no link is ever followed, so the agents of that
// machine cannot turn a folder of their session into a link between the client's check and its write: "/" is the
// session folder, links are neither read, made nor followed, and only regular files and folders are served.
func Serve(rw io.ReadWriteCloser, store *layout.Store, id string) error {
	if err := layout.ValidateID(id); err != nil {
		return err
	}
	h := &beneath{store: store, id: id}
	defer h.close()
	srv := sftp.NewRequestServer(rw, sftp.Handlers{FileGet: h, FilePut: h, FileCmd: h, FileList: h})
	defer srv.Close()
	if err := srv.Serve(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// beneath serves sftp requests beneath the session's folder. A session the store does not have is made by the
// first request that writes (a listing of it is empty): a sync that only reads never leaves one behind.
type beneath struct {
	store *layout.Store
	id    string
	mu    sync.Mutex
	d     *layout.Dir
}

// dir opens the session's folder, making the session first when create and it is missing.
func (h *beneath) dir(create bool) (*layout.Dir, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.d != nil {
		return h.d, nil
	}
	d, err := h.store.OpenSession(h.id)
	if errors.Is(err, layout.ErrNotFound) {
		if !create {
			return nil, fs.ErrNotExist
		}
		if _, err = h.store.Create(h.id, layout.CreateOptions{}); err == nil || errors.Is(err, layout.ErrExists) {
			d, err = h.store.OpenSession(h.id)
		}
	}
	if err != nil {
		return nil, err
	}
	h.d = d
	return d, nil
}

func (h *beneath) close() {
	if h.d != nil {
		h.d.Close()
	}
}

// relOf is a request's path relative to the session ("" for the session itself); pkg/sftp has cleaned it to an
// absolute path, so it has no "..".
func relOf(p string) string { return strings.Trim(p, "/") }

func (h *beneath) Fileread(r *sftp.Request) (io.ReaderAt, error) {
	d, err := h.dir(false)
	if err != nil {
		return nil, err
	}
	f, err := d.OpenRegular(relOf(r.Filepath), -1)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (h *beneath) Filewrite(r *sftp.Request) (io.WriterAt, error) {
	pf := r.Pflags()
	flags := unix.O_WRONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	if pf.Creat {
		flags |= unix.O_CREAT
	}
	if pf.Excl {
		flags |= unix.O_EXCL
	}
	if pf.Trunc {
		flags |= unix.O_TRUNC
	}
	if pf.Append {
		flags |= unix.O_APPEND // pwrite(2) on an O_APPEND file appends: a whole write lands at the end
	}
	d, err := h.dir(true)
	if err != nil {
		return nil, err
	}
	fd, err := d.OpenAt(relOf(r.Filepath), flags, 0o644)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: r.Filepath, Err: err}
	}
	f := os.NewFile(uintptr(fd), r.Filepath)
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: r.Filepath, Err: syscall.EINVAL}
	}
	if pf.Creat && os.Geteuid() == 0 { // what the sync makes is the session owner's, as the rest of it
		if uid, gid, err := d.Owner(); err == nil {
			f.Chown(uid, gid)
		}
	}
	if pf.Append {
		return appender{f}, nil
	}
	return f, nil
}

// appender writes each write at the end of its file, whatever offset it is given (os.File refuses WriteAt on an
// O_APPEND file): an append the client sends as one write lands whole, after whatever an agent appended there.
type appender struct{ f *os.File }

func (a appender) WriteAt(p []byte, _ int64) (int, error) { return a.f.Write(p) }
func (a appender) Close() error                           { return a.f.Close() }

func (h *beneath) Filecmd(r *sftp.Request) error {
	rel := relOf(r.Filepath)
	d, err := h.dir(r.Method == "Mkdir")
	if err != nil {
		return err
	}
	switch r.Method {
	case "Setstat":
		return h.setstat(d, rel, r)
	case "Rename", "PosixRename":
		return d.Rename(rel, relOf(r.Target), 0)
	case "Rmdir", "Remove":
		return d.Remove(rel)
	case "Mkdir":
		uid, gid, err := d.Owner()
		if err != nil {
			return err
		}
		return d.MkdirAll(rel, 0o755, uid, gid)
	}
	return sftp.ErrSSHFxOpUnsupported // links are never made
}

// PosixRename replaces the target, as rename(2) does.
func (h *beneath) PosixRename(r *sftp.Request) error {
	d, err := h.dir(false)
	if err != nil {
		return err
	}
	return d.Rename(relOf(r.Filepath), relOf(r.Target), 0)
}

// setstat changes a file's mode, times or size, on a descriptor opened beneath the session, never through a link.
func (h *beneath) setstat(d *layout.Dir, rel string, r *sftp.Request) error {
	fl, at := r.AttrFlags(), r.Attributes()
	if fl.UidGid {
		return sftp.ErrSSHFxPermissionDenied
	}
	fd, err := d.OpenAt(rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "setstat", Path: rel, Err: err}
	}
	defer unix.Close(fd)
	if fl.Permissions {
		if err := unix.Fchmod(fd, at.Mode&0o7777&^0o7000); err != nil {
			return err
		}
	}
	if fl.Acmodtime {
		ts := []unix.Timespec{unix.NsecToTimespec(time.Unix(int64(at.Atime), 0).UnixNano()), unix.NsecToTimespec(time.Unix(int64(at.Mtime), 0).UnixNano())}
		if err := unix.UtimesNanoAt(fd, "", ts, unix.AT_EMPTY_PATH); err != nil {
			return err
		}
	}
	if fl.Size {
		wfd, err := d.OpenAt(rel, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(wfd)
		var st unix.Stat_t
		if err := unix.Fstat(wfd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			return sftp.ErrSSHFxFailure
		}
		return unix.Ftruncate(wfd, int64(at.Size))
	}
	return nil
}

func (h *beneath) Filelist(r *sftp.Request) (sftp.ListerAt, error) {
	rel := relOf(r.Filepath)
	d, err := h.dir(false)
	if err != nil {
		return nil, err
	}
	switch r.Method {
	case "List":
		return list(d, rel)
	case "Stat", "Lstat":
		st, err := d.Lstat(rel)
		if err != nil {
			return nil, err
		}
		return listerAt{layout.InfoOf(pathBase(rel), st)}, nil
	}
	return nil, sftp.ErrSSHFxOpUnsupported
}

// Lstat is Stat: no link is followed here.
func (h *beneath) Lstat(r *sftp.Request) (sftp.ListerAt, error) { return h.Filelist(r) }

// list lists a folder of the session, each entry's own attributes (no link followed).
func list(d *layout.Dir, rel string) (sftp.ListerAt, error) {
	sub := d
	if rel != "" {
		var err error
		if sub, err = d.Sub(rel); err != nil {
			return nil, err
		}
		defer sub.Close()
	}
	ents, err := sub.ReadDir(".")
	if err != nil {
		return nil, err
	}
	out := make(listerAt, 0, len(ents))
	for _, e := range ents {
		if fi, err := e.Info(); err == nil { // an lstat beneath the session (layout.Dir.ReadDir)
			out = append(out, fi)
		}
	}
	return out, nil
}

func pathBase(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[i+1:]
	}
	if rel == "" {
		return "/"
	}
	return rel
}

type listerAt []os.FileInfo

func (l listerAt) ListAt(out []os.FileInfo, off int64) (int, error) {
	if off >= int64(len(l)) {
		return 0, io.EOF
	}
	n := copy(out, l[off:])
	if n < len(out) {
		return n, io.EOF
	}
	return n, nil
}
