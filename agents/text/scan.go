package text

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/sessionfs/sessionfs/agents"
)

// scanLines calls fn with each line of r (no newline) and the offset it starts at, r being read from offset
// start. A line longer than MaxLine is not held: fn gets it as nil with its length, so memory stays bounded
// whatever the file holds. A last line with no newline is passed only when partial (a whole file is read; a
// follower waits for the newline). A file's holes are never read (agents.DataReader: a session's sparse file of
// terabytes would keep the reader on zeros for hours): a line holding one is passed as nil, as a long one. At most
// agents.MaxRead bytes of data are read: a line the bound cuts that is long or holed is passed as nil, and a
// whole read ends with fn(nil, off, -1), what it left out. It returns the offset after the last line passed,
// where a follower reads on.
func scanLines(r io.Reader, start int64, partial bool, fn func(line []byte, off, length int64) error) (int64, error) {
	lr := &io.LimitedReader{R: agents.DataReader(r), N: agents.MaxRead}
	br := bufio.NewReaderSize(lr, 64<<10)
	off := start
	var line []byte
	var length int64
	holed := false // the line holds a hole: not one an agent wrote
	for {
		chunk, err := br.ReadSlice('\n')
		length += int64(len(chunk))
		if length <= MaxLine+1 && !holed {
			line = grow(line, len(chunk))
			line = append(line, chunk...)
		} else {
			line = nil
		}
		var hole *agents.Hole
		if errors.As(err, &hole) {
			length += hole.N
			holed, line = true, nil
			continue
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && err != io.EOF {
			return off, err
		}
		complete := err == nil
		capped := err == io.EOF && lr.N == 0 // the bound reached, maybe not the file's end
		if length > 0 && (complete || partial || capped && (length > MaxLine+1 || holed)) {
			body := line
			n := length
			if complete {
				n--
			}
			if length > MaxLine+1 || holed {
				body = nil
			} else {
				body = trimCR(body[:n])
			}
			if ferr := fn(body, off, n); ferr != nil {
				return off, ferr
			}
			off += length
		}
		if err == io.EOF {
			if capped && partial && off-start >= agents.MaxRead {
				if ferr := fn(nil, off, -1); ferr != nil {
					return off, ferr
				}
			}
			return off, nil
		}
		line, length, holed = line[:0], 0, false
	}
}

// grow makes room for n more bytes in b, doubling its capacity (append grows large slices by a quarter, which
// allocates several times a long line's size on the way).
func grow(b []byte, n int) []byte {
	if len(b)+n <= cap(b) {
		return b
	}
	nb := make([]byte, len(b), max(2*cap(b), len(b)+n))
	copy(nb, b)
	return nb
}

func trimCR(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\r' {
		return b[:len(b)-1]
	}
	return b
}

// tooLong is the Note a line over MaxLine becomes (length -1: the rest of a file past what one read takes).
func tooLong(off, length int64, sub string) Entry {
	if length < 0 {
		return Entry{Kind: Note, Offset: off, Subagent: sub,
			Text: fmt.Sprintf("(the rest of the file, past its first %d bytes, left out: sessionfs reads no more at once)", agents.MaxRead)}
	}
	return Entry{Kind: Note, Offset: off, Subagent: sub,
		Text: fmt.Sprintf("(a line of %d bytes left out: longer than the %d read)", length, MaxLine)}
}
