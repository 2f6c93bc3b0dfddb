package travel

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
)

// An archive is a zstd-compressed tar (PAX format) of one session folder: every entry is named <id>/<path>, the
// folder itself first as <id>/, each folder before what it holds. Files keep their mode bits, modification time
// (to the nanosecond) and user.* extended attributes; symlinks are links; a file with several names in the
// session is stored once and linked. Owners are not recorded: the importer owns what it imports.

// ExportOptions shape an export.
type ExportOptions struct {
	// WithCredentials packs the known credential files (IsCredential) too; they are left out otherwise.
	WithCredentials bool
	// Progress, when set, is called as entries are written, with what is done and the total to do.
	Progress func(done, total Counts)
	// Output is the file the archive goes to, if any: should it lie in the session, it is not packed into itself.
	Output *os.File
}

// ExportReport says what an export packed and what it did not.
type ExportReport struct {
	ID string `json:"id"`
	Counts
	// Credentials are the credential files found (packed only WithCredentials).
	Credentials []string `json:"credentials"`
	// Skipped are the entries left out and why: FIFOs, sockets, devices, links leading out of the session, files
	// that vanished meanwhile.
	Skipped []string `json:"skipped"`
}

// Export writes session id of store to w as one archive. Everything is read beneath the session's descriptor,
// never through a symlink, never opening a FIFO or a device (they are skipped and reported). A transcript being
// written is packed up to its last whole line. Cancelling ctx stops it between two entries.
func Export(ctx context.Context, store *layout.Store, id string, w io.Writer, opts ExportOptions) (*ExportReport, error) {
	sess, err := store.OpenSession(id)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	rep := &ExportReport{ID: id, Credentials: []string{}, Skipped: []string{}}

	var root unix.Stat_t
	if err := unix.Fstat(sess.Fd(), &root); err != nil {
		return nil, fmt.Errorf("export %s: %w", id, err)
	}
	var out unix.Stat_t
	if opts.Output == nil || unix.Fstat(int(opts.Output.Fd()), &out) != nil {
		out.Ino = 0
	}
	all := found{entries: []walked{{".", root}}, total: Counts{Files: 1}}
	secret := map[[2]uint64]string{} // credential files left out: their other names are left out too
	state := map[[2]uint64]bool{}    // Claude's state files, under any of their names
	err = sess.Walk(func(rel string, st *unix.Stat_t) error {
		if out.Ino != 0 && st.Dev == out.Dev && st.Ino == out.Ino {
			return nil
		}
		if isStateFile(rel) && st.Mode&unix.S_IFMT == unix.S_IFREG {
			state[[2]uint64{st.Dev, st.Ino}] = true
		}
		if _, sidecar, ok := secretOf(rel); ok && sidecar && !opts.WithCredentials {
			rep.Skipped = append(rep.Skipped, rel+": beside a file whose credentials are taken out (what it held is in the copy packed)")
			return nil
		}
		if t := st.Mode & unix.S_IFMT; IsCredential(rel) && (t == unix.S_IFREG || t == unix.S_IFLNK) {
			rep.Credentials = append(rep.Credentials, rel)
			if !opts.WithCredentials {
				if st.Nlink > 1 {
					secret[[2]uint64{st.Dev, st.Ino}] = rel
				}
				return nil
			}
		}
		all.add(rel, st)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", id, err)
	}
	if len(secret) > 0 {
		kept := all.entries[:0]
		for _, e := range all.entries {
			if c, ok := secret[[2]uint64{e.st.Dev, e.st.Ino}]; ok && e.st.Mode&unix.S_IFMT == unix.S_IFREG {
				rep.Skipped = append(rep.Skipped, e.rel+": a hard link to the credential "+c)
				continue
			}
			kept = append(kept, e)
		}
		all.entries = kept
	}
	all.sortFrom(1) // the session's own folder stays first

	zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	x := exporter{sess: sess, tw: tw, id: id, rep: rep, links: map[[2]uint64]string{}, withCreds: opts.WithCredentials,
		state: state}
	if cancelled, err := all.copyEach(ctx, x.add, &rep.Counts, opts.Progress); err != nil {
		zw.Close()
		if cancelled {
			return nil, err
		}
		return nil, fmt.Errorf("export %s: %w", id, err)
	}
	if err := tw.Close(); err != nil {
		zw.Close()
		return nil, fmt.Errorf("export %s: %w", id, err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("export %s: %w", id, err)
	}
	return rep, nil
}

type exporter struct {
	sess      *layout.Dir
	tw        *tar.Writer
	id        string
	rep       *ExportReport
	links     map[[2]uint64]string // (dev, ino) of a file with several names -> the name it was packed under
	withCreds bool
	state     map[[2]uint64]bool
}

func (x *exporter) skip(rel, why string) {
	x.rep.Skipped = append(x.rep.Skipped, rel+": "+why)
}

// add packs one entry of the session.
func (x *exporter) add(rel string, st *unix.Stat_t) error {
	name := x.id + "/"
	if rel != "." {
		name += rel
	}
	hdr := &tar.Header{Name: name, Mode: int64(st.Mode & 0o7777), ModTime: mtime(st), Format: tar.FormatPAX}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		hdr.Typeflag, hdr.Name = tar.TypeDir, name+"/"
		if rel == "." {
			hdr.Name = name
		}
		if fd, err := x.sess.OpenAt(rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK, 0); err == nil {
			hdr.PAXRecords = paxXattrs(userXattrs(fd))
			unix.Close(fd)
		}
		return x.write(hdr, nil)
	case unix.S_IFLNK:
		target, err := x.sess.Readlink(rel)
		if err != nil {
			return x.vanished(rel, err)
		}
		if !LinkInside(rel, target) {
			x.skip(rel, "a symlink to "+target+", outside the session")
			return nil
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
		return x.write(hdr, nil)
	case unix.S_IFREG:
		return x.file(rel, hdr)
	case unix.S_IFIFO:
		x.skip(rel, "a FIFO")
	case unix.S_IFSOCK:
		x.skip(rel, "a socket")
	default:
		x.skip(rel, "a device")
	}
	return nil
}

// file packs the regular file rel: opened without following a link, never a FIFO swapped in since the walk.
func (x *exporter) file(rel string, hdr *tar.Header) error {
	f, err := x.sess.OpenRegular(rel, -1)
	if err != nil {
		return x.vanished(rel, err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	hdr.Mode, hdr.ModTime = int64(st.Mode&0o7777), mtime(&st)
	if st.Nlink > 1 {
		key := [2]uint64{st.Dev, st.Ino}
		if first, ok := x.links[key]; ok {
			hdr.Typeflag, hdr.Linkname = tar.TypeLink, first
			return x.write(hdr, nil)
		}
		x.links[key] = hdr.Name
	}
	size := st.Size
	if x.state[[2]uint64{st.Dev, st.Ino}] && size <= layout.MaxMetaSize {
		data := make([]byte, size)
		n, err := io.ReadFull(f, data)
		if err != nil && err != io.ErrUnexpectedEOF { // shrunk meanwhile: what there is
			return err
		}
		data = data[:n]
		if clean, dropped := withoutCredentials(data); dropped != nil {
			for _, k := range dropped {
				x.rep.Credentials = append(x.rep.Credentials, rel+" ("+k+")")
			}
			if !x.withCreds {
				data = clean
			}
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(data))
		hdr.PAXRecords = paxXattrs(userXattrs(int(f.Fd())))
		return x.write(hdr, bytes.NewReader(data))
	}
	if sec, sidecar, ok := secretOf(rel); ok && !sidecar && !x.withCreds {
		data, dropped, err := sec.Scrub(x.sess)
		if err != nil {
			x.skip(rel, "its credentials could not be taken out ("+err.Error()+")")
			return nil
		}
		for _, d := range dropped {
			x.rep.Credentials = append(x.rep.Credentials, rel+" ("+d+")")
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(data))
		return x.write(hdr, bytes.NewReader(data))
	}
	if isTranscript(rel) {
		if size, err = wholeLines(f, size); err != nil {
			return err
		}
	}
	hdr.Typeflag, hdr.Size = tar.TypeReg, size
	hdr.PAXRecords = paxXattrs(userXattrs(int(f.Fd())))
	return x.write(hdr, io.NewSectionReader(f, 0, size))
}

// vanished skips an entry that was removed or replaced by something we do not follow since the walk.
func (x *exporter) vanished(rel string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ELOOP) || errors.Is(err, layout.ErrDamaged) || errors.Is(err, unix.ENOTDIR) {
		x.skip(rel, "changed while being exported ("+err.Error()+")")
		return nil
	}
	return err
}

func (x *exporter) write(hdr *tar.Header, body io.Reader) error {
	if err := x.tw.WriteHeader(hdr); err != nil {
		return err
	}
	x.rep.Files++
	if body == nil {
		return nil
	}
	n, err := io.Copy(x.tw, body)
	x.rep.Bytes += n
	if err != nil {
		return err
	}
	if n < hdr.Size { // the file shrank while we read it: keep the archive whole
		_, err = io.CopyN(x.tw, zeros{}, hdr.Size-n)
		x.skip(hdr.Name, "shrank while being exported; padded with zeros")
	}
	return err
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func mtime(st *unix.Stat_t) time.Time { return time.Unix(st.Mtim.Sec, st.Mtim.Nsec) }

// paxXattrs carries xattrs as tar's SCHILY.xattr records (GNU tar and bsdtar read them too).
func paxXattrs(x map[string]string) map[string]string {
	if len(x) == 0 {
		return nil
	}
	out := make(map[string]string, len(x))
	for k, v := range x {
		out[paxXattr+k] = v
	}
	return out
}

const paxXattr = "SCHILY.xattr."
