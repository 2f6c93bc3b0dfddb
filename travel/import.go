package travel

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
)

// What an import takes, unless told otherwise: an archive is untrusted, and one made to fill the disk or the
// inode table (a few kilobytes of zstd can stand for terabytes of zeros) is refused before it does.
const (
	DefaultMaxBytes = 64 << 30 // file content, after decompression
	DefaultMaxFiles = 1_000_000
)

// zstd's own bounds: a frame cannot make the decoder hold more than this, whatever its header claims.
const (
	maxDecoderMemory = 512 << 20
	maxDecoderWindow = 128 << 20
)

// ImportOptions shape an import.
type ImportOptions struct {
	As       string // the new session's id; by default the one the archive names
	MaxBytes int64  // file content allowed; 0 means DefaultMaxBytes
	MaxFiles int    // entries allowed; 0 means DefaultMaxFiles
	// Progress, when set, is called as entries are restored, with what is done so far.
	Progress func(done Counts)
}

// Import restores a session from an archive (see Export) into store, and returns its id. It is all or nothing:
// the session is assembled in a hidden folder of the store's sessions folder and renamed into place only once
// whole, so a refused or failed import leaves nothing behind. A damaged or hostile archive is refused
// (ErrRefused): a name that is absolute, climbs out with "..", or lies outside the session's folder; a link
// leading out of the session; a device file or a FIFO; an entry twice; more content or entries than the limits.
// Every write is made beneath the staging folder's descriptor, never through a symlink (not even one the
// archive made a moment before). Modes keep their permission bits only (no setuid, setgid or sticky bit), and
// only user.* extended attributes are restored.
// Cancelling ctx stops it between two entries, leaving nothing behind.
func Import(ctx context.Context, store *layout.Store, r io.Reader, opts ImportOptions) (id string, done Counts, err error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxFiles <= 0 {
		opts.MaxFiles = DefaultMaxFiles
	}
	zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxDecoderMemory),
		zstd.WithDecoderMaxWindow(maxDecoderWindow))
	if err != nil {
		return "", done, err
	}
	defer zr.Close()
	src := &reader{r: zr}
	tr := tar.NewReader(src)
	hdr, err := tr.Next()
	if err != nil {
		return "", done, damaged(src, err)
	}
	top := strings.TrimSuffix(hdr.Name, "/")
	if hdr.Typeflag != tar.TypeDir || layout.ValidateID(top) != nil {
		return "", done, refused(hdr.Name, "is not a session folder: not a sessionfs archive")
	}
	id = top
	if opts.As != "" {
		id = opts.As
	}
	if err := layout.ValidateID(id); err != nil {
		return "", done, err
	}
	if store.Exists(id) {
		return "", done, &layout.Error{Op: "import", ID: id, Kind: layout.ErrExists}
	}
	stage, dst, remove, err := newStage(store, importStage, id)
	if err != nil {
		return "", done, fmt.Errorf("import %s: %w", id, err)
	}
	defer dst.Close()
	defer func() {
		if err != nil {
			remove()
		}
	}()

	x := &importer{dst: dst, top: top + "/", opts: opts, files: map[string]bool{}, progress: opts.Progress}
	x.dirs = append(x.dirs, dirAttrs{rel: ".", mode: 0o755, hdr: hdr})
	x.done.Files = 1
	for {
		if err := ctx.Err(); err != nil {
			return "", x.done, err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", x.done, damaged(src, err)
		}
		if err := x.entry(hdr, tr, src); err != nil {
			return "", x.done, err
		}
		if x.progress != nil {
			x.progress(x.done)
		}
	}
	if err := x.finish(id); err != nil {
		return "", x.done, err
	}
	if err := store.Place(stage, id); err != nil {
		if errors.Is(err, os.ErrExist) {
			return "", x.done, &layout.Error{Op: "import", ID: id, Kind: layout.ErrExists}
		}
		return "", x.done, fmt.Errorf("import %s: %w", id, err)
	}
	return id, x.done, nil
}

// reader remembers the error reading the archive gave, so a failed copy can say whether the archive was at
// fault (damaged) or the store (a full disk, say).
type reader struct {
	r   io.Reader
	err error
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		r.err = err
	}
	return n, err
}

type dirAttrs struct {
	rel  string
	mode uint32
	hdr  *tar.Header
}

type importer struct {
	dst      *layout.Dir
	top      string // the archive's session folder, "<id>/"
	opts     ImportOptions
	done     Counts
	dirs     []dirAttrs      // modes and times are set at the end: making what a folder holds changes its time
	files    map[string]bool // regular files restored: the only targets a hard link may have
	progress func(Counts)
	lastProg int64
}

// rel checks an archive name and returns its path in the session.
func (x *importer) rel(name string) (string, error) {
	switch {
	case strings.ContainsRune(name, 0):
		return "", refused(name, "has a NUL in its name")
	case path.IsAbs(name):
		return "", refused(name, "has an absolute name")
	case name == ".." || strings.HasPrefix(name, "../") || strings.Contains(name, "/../") || strings.HasSuffix(name, "/.."):
		return "", refused(name, "climbs out of the session (\"..\")")
	case !strings.HasPrefix(name, x.top):
		return "", refused(name, "is outside the session's folder %s", x.top)
	}
	rel := strings.TrimSuffix(strings.TrimPrefix(name, x.top), "/")
	if rel == "" || path.Clean(rel) != rel || rel == "." {
		return "", refused(name, "has a malformed name")
	}
	if strings.Count(rel, "/") >= layout.MaxWalkDepth {
		return "", refused(name, "is nested more than %d folders deep", layout.MaxWalkDepth)
	}
	return rel, nil
}

func (x *importer) entry(hdr *tar.Header, body io.Reader, src *reader) error {
	x.done.Files++
	if x.done.Files > x.opts.MaxFiles {
		return refused("", "it holds more than %d entries (the limit; --max-files raises it)", x.opts.MaxFiles)
	}
	rel, err := x.rel(hdr.Name)
	if err != nil {
		return err
	}
	switch hdr.Typeflag {
	case tar.TypeReg:
	case tar.TypeDir, tar.TypeSymlink, tar.TypeLink:
		if hdr.Size != 0 {
			return refused(hdr.Name, "is damaged: a %s with %d bytes of content", kind(hdr.Typeflag), hdr.Size)
		}
	case tar.TypeChar, tar.TypeBlock:
		return refused(hdr.Name, "is a device file")
	case tar.TypeFifo:
		return refused(hdr.Name, "is a FIFO")
	default:
		return refused(hdr.Name, "has an entry type (%q) sessionfs does not make", hdr.Typeflag)
	}
	if hdr.Typeflag == tar.TypeDir {
		if err := x.mkdirs(hdr.Name, rel); err != nil {
			return err
		}
		x.dirs = append(x.dirs, dirAttrs{rel: rel, mode: uint32(hdr.Mode) & 0o777, hdr: hdr})
		return nil
	}
	if dir := path.Dir(rel); dir != "." {
		if err := x.mkdirs(hdr.Name, dir); err != nil {
			return err
		}
	}
	pfd, name, err := x.dst.Parent(rel)
	if err != nil {
		return x.writeErr(hdr.Name, err)
	}
	defer unix.Close(pfd)
	switch hdr.Typeflag {
	case tar.TypeSymlink:
		if !LinkInside(rel, hdr.Linkname) {
			return refused(hdr.Name, "is a symlink to %q, outside the session", printable(hdr.Linkname))
		}
		if err := unix.Symlinkat(hdr.Linkname, pfd, name); err != nil {
			return x.writeErr(hdr.Name, err)
		}
		setTimes(pfd, name, hdr)
		return nil
	case tar.TypeLink:
		target, err := x.rel(hdr.Linkname)
		if err != nil || !x.files[target] {
			return refused(hdr.Name, "is a hard link to %q, which is not a file before it in the session", printable(hdr.Linkname))
		}
		tfd, tname, err := x.dst.Parent(target)
		if err != nil {
			return x.writeErr(hdr.Name, err)
		}
		defer unix.Close(tfd)
		if err := unix.Linkat(tfd, tname, pfd, name, 0); err != nil {
			return x.writeErr(hdr.Name, err)
		}
		return nil
	}
	return x.file(hdr, body, src, pfd, name, rel)
}

func (x *importer) file(hdr *tar.Header, body io.Reader, src *reader, pfd int, name, rel string) error {
	if hdr.Size < 0 || x.done.Bytes+hdr.Size > x.opts.MaxBytes {
		return refused(hdr.Name, "would make the session larger than %s (the limit; --max-bytes raises it)",
			humanize.IBytes(uint64(x.opts.MaxBytes)))
	}
	fd, err := unix.Openat(pfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return x.writeErr(hdr.Name, err)
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	x.files[rel] = true
	src.err = nil
	n, err := io.Copy(f, &progressReader{r: body, x: x})
	if err != nil {
		if src.err != nil || errors.Is(err, io.ErrUnexpectedEOF) {
			return damaged(src, err)
		}
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if n != hdr.Size {
		return refused(hdr.Name, "is cut short (damaged)")
	}
	if err := f.Chmod(os.FileMode(hdr.Mode & 0o777)); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	setUserXattrs(fd, xattrsOf(hdr))
	ts := unix.NsecToTimespec(hdr.ModTime.UnixNano())
	_ = unix.UtimesNanoAt(fd, "", []unix.Timespec{ts, ts}, unix.AT_EMPTY_PATH)
	return f.Close()
}

// progressReader counts content as it is restored, calling Progress every few megabytes within a big file.
type progressReader struct {
	r io.Reader
	x *importer
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.x.done.Bytes += int64(n)
	if p.x.progress != nil && p.x.done.Bytes-p.x.lastProg > 4<<20 {
		p.x.lastProg = p.x.done.Bytes
		p.x.progress(p.x.done)
	}
	return n, err
}

// mkdirs makes the folder rel and its parents, never through a symlink: an archive that makes a link and then
// puts a file beneath it is refused.
func (x *importer) mkdirs(entry, rel string) error {
	err := x.dst.MkdirAll(rel, 0o700, -1, -1)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EEXIST) {
		return refused(entry, "lies beneath a symlink or a file of the archive")
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	return nil
}

// writeErr is the error of making entry in the staging folder: an entry made twice, or through a link the
// archive made, is the archive's fault.
func (x *importer) writeErr(entry string, err error) error {
	switch {
	case errors.Is(err, unix.EEXIST):
		return refused(entry, "appears twice")
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
		return refused(entry, "lies beneath a symlink or a file of the archive")
	}
	return fmt.Errorf("write %s: %w", strings.TrimPrefix(entry, x.top), err)
}

// finish checks the restored folder is a session, makes the convention folders it may lack, sets the folders'
// modes and times (deepest first) and syncs the lot to disk.
func (x *importer) finish(id string) error {
	b, err := x.dst.ReadRegular(layout.MetaFile, layout.MaxMetaSize)
	if err != nil {
		return refused("", "it holds no readable %s: not a sessionfs archive (%v)", layout.MetaFile, err)
	}
	var m layout.Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return refused(x.top+layout.MetaFile, "is damaged: %v", err)
	}
	if m.ID != id || slices.ContainsFunc(m.Runs, func(r layout.Run) bool { return !r.Imported }) {
		m.ID = id // the session's id is its folder's name: say so in the file too
		for i := range m.Runs {
			m.Runs[i].Imported = true // ran elsewhere: ps, runs, logs and the page say so
		}
		if err := writeMeta(x.dst, &m); err != nil {
			return err
		}
	}
	for _, rel := range []string{layout.AppDir, layout.WorkspaceDir, layout.MCPDir, layout.ProjectsDir + "/" + layout.CanonicalProject} {
		if err := x.mkdirs(rel, rel); err != nil {
			return err
		}
	}
	for i := len(x.dirs) - 1; i >= 0; i-- {
		d := x.dirs[i]
		fd, err := x.dst.OpenAt(d.rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return x.writeErr(x.top+d.rel, err)
		}
		setUserXattrs(fd, xattrsOf(d.hdr))
		err = unix.Fchmod(fd, d.mode)
		ts := unix.NsecToTimespec(d.hdr.ModTime.UnixNano())
		_ = unix.UtimesNanoAt(fd, "", []unix.Timespec{ts, ts}, unix.AT_EMPTY_PATH)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("chmod %s: %w", d.rel, err)
		}
	}
	fd, err := x.dst.OpenAt(".", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Syncfs(fd)
}

// setTimes sets the modification time of the entry name in the folder pfd, not following it.
func setTimes(pfd int, name string, hdr *tar.Header) {
	ts := unix.NsecToTimespec(hdr.ModTime.UnixNano())
	_ = unix.UtimesNanoAt(pfd, name, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW)
}

func xattrsOf(hdr *tar.Header) map[string]string {
	var out map[string]string
	for k, v := range hdr.PAXRecords {
		if name, ok := strings.CutPrefix(k, paxXattr); ok {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = v
		}
	}
	return out
}

func kind(t byte) string {
	switch t {
	case tar.TypeDir:
		return "folder"
	case tar.TypeSymlink:
		return "symlink"
	}
	return "hard link"
}

// writeMeta replaces session.json beneath d, as the store writes it.
func writeMeta(d *layout.Dir, m *layout.Meta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return d.WriteAtomic(layout.MetaFile, append(b, '\n'), 0o644, -1, -1)
}
