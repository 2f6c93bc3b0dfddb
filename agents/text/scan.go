package text

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// scanLines calls fn with each line of r (no newline) and the offset it starts at, r being read from offset
// start. A line longer than MaxLine is not held: fn gets it as nil with its length, so memory stays bounded
// whatever the file holds. A last line with no newline is passed only when partial (a whole file is read; a
// follower waits for the newline). It returns the offset after the last line passed.
func scanLines(r io.Reader, start int64, partial bool, fn func(line []byte, off, length int64) error) (int64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	off := start
	var line []byte
	var length int64
	for {
		chunk, err := br.ReadSlice('\n')
		length += int64(len(chunk))
		if length <= MaxLine+1 {
			line = grow(line, len(chunk))
			line = append(line, chunk...)
		} else {
			line = nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && err != io.EOF {
			return off, err
		}
		complete := err == nil
		if length > 0 && (complete || partial) {
			body := line
			n := length
			if complete {
				n--
			}
			if length > MaxLine+1 {
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
			return off, nil
		}
		line, length = line[:0], 0
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

// tooLong is the Note a line over MaxLine becomes.
func tooLong(off, length int64, sub string) Entry {
	return Entry{Kind: Note, Offset: off, Subagent: sub,
		Text: fmt.Sprintf("(a line of %d bytes left out: longer than the %d read)", length, MaxLine)}
}
