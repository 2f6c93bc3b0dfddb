package travel

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrRefused is what every refusal of an archive matches (errors.Is).
var ErrRefused = errors.New("archive refused")

// RefusedError says why an archive was refused: it is damaged, hostile, or past a limit.
type RefusedError struct {
	Entry string // the entry at fault, when there is one
	Why   string
}

func (e *RefusedError) Error() string {
	if e.Entry == "" {
		return "archive refused: " + e.Why
	}
	return fmt.Sprintf("archive refused: entry %q %s", printable(e.Entry), e.Why)
}

func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

func refused(entry, format string, args ...any) error {
	return &RefusedError{Entry: entry, Why: fmt.Sprintf(format, args...)}
}

// damaged turns an error reading the archive into a refusal.
func damaged(src *reader, err error) error {
	if src.err != nil {
		err = src.err
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return refused("", "the archive is cut short (damaged)")
	}
	return refused("", "the archive is damaged: %v", err)
}

// printable keeps a name from an archive to one readable line in a message.
func printable(s string) string {
	const max = 120
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
