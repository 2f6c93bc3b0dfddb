package text

import (
	"io"
	"unicode/utf8"
)

// SafeWriter passes a stream to w as Safe passes a string (with no bound): what a session's processes printed
// (sessionfs logs of a run) reaches a terminal as text, its escape sequences shown, never sent. A rune or a
// "\r\n" cut between two writes is held until the next one; Close writes what is held.
type SafeWriter struct {
	w    io.Writer
	held []byte
}

// NewSafeWriter returns a SafeWriter writing to w.
func NewSafeWriter(w io.Writer) *SafeWriter { return &SafeWriter{w: w} }

// Write escapes p (and what the last write held) to w. It reports p as written once w took its escaped form.
func (s *SafeWriter) Write(p []byte) (int, error) {
	b := append(s.held, p...)
	cut := len(b) - incomplete(b)
	if _, err := io.WriteString(s.w, clean(string(b[:cut]), 0, true)); err != nil {
		s.held = nil
		return 0, err
	}
	s.held = append(s.held[:0:0], b[cut:]...)
	return len(p), nil
}

// Close writes what is held (a lone "\r", a rune cut short: shown as Safe shows them). It does not close w.
func (s *SafeWriter) Close() error {
	if len(s.held) == 0 {
		return nil
	}
	_, err := io.WriteString(s.w, clean(string(s.held), 0, true))
	s.held = nil
	return err
}

// incomplete is how many bytes at the end of b the next write may complete: a "\r" (its "\n" may follow) or
// the start of a UTF-8 rune cut short.
func incomplete(b []byte) int {
	if len(b) > 0 && b[len(b)-1] == '\r' {
		return 1
	}
	for n := 1; n <= utf8.UTFMax-1 && n <= len(b); n++ {
		c := b[len(b)-n]
		if c < 0x80 {
			return 0 // ASCII: nothing is cut
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(b[len(b)-n:]) {
				return 0
			}
			return n
		}
	}
	return 0
}
