package opencode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// A session's database is read where it lies before any byte of it is copied: its 100-byte header (SQLite's magic,
// its page size, the pages it says it holds) and its log's 32-byte one. A file whose header is not SQLite's, or
// says another size than the file has, is refused in place; what a copy takes is what the header says (a file
// bigger than that is refused too), within the caller's bound, and its holes are not read: two sparse files of 1
// GiB, zeros, cost every reader 2 GiB of copying into its temporary folder before the schema check refused them.

// errHeader marks a database or log refused for its header.
var errHeader = errors.New("not an SQLite database of the size it says")

var sqliteMagic = []byte("SQLite format 3\x00")

// dbSize is what the header of the database open as f, of size bytes, says of it: its page size and the bytes a
// copy takes (0: an empty file, which SQLite makes a database of). It refuses (errHeader) a file whose header is
// not SQLite's, whose page size is not one, whose size is not whole pages, or is not the pages the header says.
func dbSize(f *os.File, size int64) (pageSize, n int64, err error) {
	if size == 0 {
		return 0, 0, nil
	}
	var h [100]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, 0, fmt.Errorf("%w: %d bytes, shorter than SQLite's header", errHeader, size)
		}
		return 0, 0, err
	}
	if !bytes.Equal(h[:16], sqliteMagic) {
		return 0, 0, fmt.Errorf("%w: its first bytes are not SQLite's", errHeader)
	}
	pageSize = int64(binary.BigEndian.Uint16(h[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	if pageSize < 512 || pageSize > 65536 || pageSize&(pageSize-1) != 0 {
		return 0, 0, fmt.Errorf("%w: page size %d", errHeader, pageSize)
	}
	if size%pageSize != 0 {
		return 0, 0, fmt.Errorf("%w: %d bytes, not pages of %d", errHeader, size, pageSize)
	}
	// The page count is the header's own when it was written with the change counter it goes with (SQLite
	// 3.7.0 and later); else SQLite counts the file's pages.
	pages := int64(binary.BigEndian.Uint32(h[28:32]))
	if pages != 0 && bytes.Equal(h[24:28], h[92:96]) && pages*pageSize != size {
		return 0, 0, fmt.Errorf("%w: its header says %d pages of %d bytes, the file holds %d bytes", errHeader, pages, pageSize, size)
	}
	return pageSize, size, nil
}

// walSize is what the header of the log open as f, of size bytes, says of it: the bytes a copy takes (0: none,
// a log still empty or being begun). It refuses (errHeader) a log whose header is not SQLite's or whose pages are
// not the database's (pageSize, 0: any).
func walSize(f *os.File, size, pageSize int64) (int64, error) {
	if size < 32 {
		return 0, nil // no log yet (SQLite writes its header with its first frame): nothing SQLite reads
	}
	var h [32]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		return 0, err
	}
	if m := binary.BigEndian.Uint32(h[:4]); m != 0x377f0682 && m != 0x377f0683 {
		return 0, fmt.Errorf("%w: its log's first bytes are not SQLite's", errHeader)
	}
	ps := int64(binary.BigEndian.Uint32(h[8:12]))
	if ps < 512 || ps > 65536 || ps&(ps-1) != 0 || pageSize != 0 && ps != pageSize {
		return 0, fmt.Errorf("%w: its log's pages are of %d bytes, the database's of %d", errHeader, ps, pageSize)
	}
	return size, nil
}

// copyData copies the first n bytes of src to dst, reading only src's data: its holes stay holes in dst.
func copyData(dst, src *os.File, n int64) error {
	for off := int64(0); off < n; {
		data, err := unix.Seek(int(src.Fd()), off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // a hole to the end
		}
		if err != nil { // no SEEK_DATA here: all of it
			data = off
		}
		hole, err := unix.Seek(int(src.Fd()), data, unix.SEEK_HOLE)
		if err != nil {
			hole = n
		}
		end := min(hole, n)
		if data >= end {
			break
		}
		if _, err := io.Copy(io.NewOffsetWriter(dst, data), io.NewSectionReader(src, data, end-data)); err != nil {
			return err
		}
		off = end
	}
	return dst.Truncate(n)
}
