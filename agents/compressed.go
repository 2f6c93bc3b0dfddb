package agents

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/sessionfs/sessionfs/layout"
)

// An agent may keep a conversation file compressed: Codex rewrites a rollout untouched for 7 days as <name>.zst
// (zstd, in place; its local_thread_store_compression feature, off by default in 0.171.0). The file is the
// session's to write, and a few kilobytes of zstd can stand for terabytes, so its reading is bounded by what it
// holds on disk, as a plain file's is (holes.go):
//   - memory: a frame whose window is over MaxWindow is refused (the decoder holds a window, and a frame's header
//     may claim any; Codex's level 3 uses at most 2 MiB);
//   - output: at most MaxInflate bytes a compressed byte read, plus inflateSlack (a block or two), and the scans'
//     MaxRead;
//   - input: its data only, a hole ending it (no compressor writes one).

// Compressed ends the name of a compressed conversation file.
const Compressed = ".zst"

// The bounds of a compressed file's reading.
const (
	MaxWindow    = 8 << 20
	MaxInflate   = 64
	inflateSlack = 256 << 10
)

// ErrCompressed is a compressed conversation file that cannot be read whole: damaged, or over the bounds above.
var ErrCompressed = errors.New("a compressed conversation file not read whole")

// Content is a conversation file open for reading: File as it is on disk, Reader what it holds (File itself,
// whose holes DataReader passes by, or its decompression).
type Content struct {
	File   *os.File
	Reader io.Reader
	dec    *zstd.Decoder
}

// OpenFile opens conversation file rel beneath d, only if it is a regular file reached with no symlink.
func OpenFile(d *layout.Dir, rel string) (*Content, error) {
	f, err := d.OpenRegular(rel, -1)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(rel, Compressed) {
		return &Content{File: f, Reader: f}, nil
	}
	in := &counted{r: DataReader(f)}
	dec, err := zstd.NewReader(in, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(MaxWindow), zstd.WithDecoderMaxMemory(MaxWindow))
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Content{File: f, Reader: &inflater{dec: dec, in: in}, dec: dec}, nil
}

// Close closes the file.
func (c *Content) Close() error {
	if c.dec != nil {
		c.dec.Close()
	}
	return c.File.Close()
}

// Skip passes the first n bytes of what the file holds: a plain file is seeked, a compressed one read past.
func (c *Content) Skip(n int64) error {
	if c.dec == nil {
		_, err := c.File.Seek(n, io.SeekStart)
		return err
	}
	if m, err := io.CopyN(io.Discard, c.Reader, n); m < n {
		return fmt.Errorf("%w: %d bytes of it read, %d asked for: %v", ErrCompressed, m, n, err)
	}
	return nil
}

// PlainName is name without Compressed: the file it stands for.
func PlainName(name string) string { return strings.TrimSuffix(name, Compressed) }

// counted reads r, counting the bytes; a hole ends it.
type counted struct {
	r io.Reader
	n int64
}

func (c *counted) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if _, hole := err.(*Hole); hole {
		err = errors.New("a hole in it")
	}
	return n, err
}

// inflater is a compressed file's decompression, within MaxInflate of what it read.
type inflater struct {
	dec *zstd.Decoder
	in  *counted
	out int64
	err error
}

func (z *inflater) Read(p []byte) (int, error) {
	if z.err != nil {
		return 0, z.err
	}
	allow := MaxInflate*z.in.n + inflateSlack - z.out
	if allow <= 0 {
		z.err = fmt.Errorf("%w: it stands for more than %d times its size", ErrCompressed, MaxInflate)
		return 0, z.err
	}
	if int64(len(p)) > allow {
		p = p[:allow]
	}
	n, err := z.dec.Read(p)
	z.out += int64(n)
	if err != nil && err != io.EOF {
		z.err = fmt.Errorf("%w: %v", ErrCompressed, err)
		err = z.err
	}
	return n, err
}
