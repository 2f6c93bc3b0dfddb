package agents

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// A session can make a conversation file that is mostly holes (truncate -s, or a seek past the end before a
// write): terabytes that read as zeros and take no disk. Reading them through would keep whatever lists or renders
// the session's conversations (the mount's text view, ls, log) on zeros for hours, each request a core, and a
// process waiting on the mount unkillable meanwhile. So conversation files are read by their data alone: a hole
// is passed by (SEEK_DATA), never read, and the line it falls in is not a line (an agent appends: its files have
// no holes). Reading costs what the file holds on disk, not what it claims.

// Hole is the error DataReader's Read returns at a hole of N bytes it passed by (the file's offset is past it):
// the zeros the caller counts without reading them. Reads after it go on with the data that follows.
type Hole struct{ N int64 }

func (h *Hole) Error() string { return "a hole in the file" }

// DataReader reads r from where it is, passing its holes by when r is a file (anything else is read as it is).
func DataReader(r io.Reader) io.Reader {
	f, ok := r.(*os.File)
	if !ok {
		return r
	}
	pos, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return r
	}
	return &dataReader{f: f, pos: pos, dataEnd: pos}
}

type dataReader struct {
	f       *os.File
	pos     int64 // the file's offset
	dataEnd int64 // where the data at pos ends (a hole or the file's end): reads up to it need no look
	plain   bool  // the filesystem tells no holes: read as it is
}

func (d *dataReader) Read(p []byte) (int, error) {
	if !d.plain && d.pos >= d.dataEnd {
		fd := int(d.f.Fd())
		data, err := unix.Seek(fd, d.pos, unix.SEEK_DATA)
		switch {
		case errors.Is(err, unix.ENXIO): // no data past pos: a hole to the end, or the end
			end, serr := d.f.Seek(0, io.SeekEnd)
			if serr != nil || end <= d.pos {
				_, _ = d.f.Seek(d.pos, io.SeekStart)
				return 0, io.EOF
			}
			n := end - d.pos
			d.pos = end
			return 0, &Hole{N: n}
		case err != nil:
			d.plain = true // SEEK_DATA unsupported: every byte is data
			if _, err := d.f.Seek(d.pos, io.SeekStart); err != nil {
				return 0, err
			}
		case data > d.pos:
			if _, err := d.f.Seek(data, io.SeekStart); err != nil {
				return 0, err
			}
			n := data - d.pos
			d.pos, d.dataEnd = data, data
			return 0, &Hole{N: n}
		default:
			hole, err := unix.Seek(fd, d.pos, unix.SEEK_HOLE)
			if _, serr := d.f.Seek(d.pos, io.SeekStart); serr != nil {
				return 0, serr
			}
			if err != nil || hole <= d.pos {
				d.plain = true
			} else {
				d.dataEnd = hole
			}
		}
	}
	if !d.plain && int64(len(p)) > d.dataEnd-d.pos {
		p = p[:d.dataEnd-d.pos]
	}
	n, err := d.f.Read(p)
	d.pos += int64(n)
	return n, err
}
