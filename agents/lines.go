package agents

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
)

// MaxLine bounds one line of a conversation file; tool results can be large, and a longer line is counted as
// malformed and skipped.
const MaxLine = 64 << 20

// MaxRead bounds what one scan reads of a conversation file. A session can make a file of terabytes that holds
// nothing (a sparse file: truncate -s, no disk spent), which would keep whatever lists its conversations (the
// mount's text view, ls, log) reading zeros for hours; a real transcript is far smaller.
const MaxRead = 1 << 30

// ScanLines calls fn for each line of r (without its newline), up to MaxRead bytes of data (a file's holes
// passed by: DataReader), and counts the lines fn refused, that were too long or held a hole. A torn last line (a writer mid-append) or garbage never stops the scan.
func ScanLines(r io.Reader, fn func([]byte) error) (malformed int, err error) {
	br := bufio.NewReaderSize(io.LimitReader(DataReader(r), MaxRead), 64<<10)
	for {
		var line []byte
		long := false
		for {
			chunk, err := br.ReadSlice('\n')
			if !long && len(line)+len(chunk) <= MaxLine {
				line = append(line, chunk...)
			} else {
				long, line = true, nil
			}
			var hole *Hole
			if errors.As(err, &hole) {
				long, line = true, nil // zeros in a line: not one an agent wrote
				continue
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil && err != io.EOF {
				return malformed, err
			}
			line = bytes.TrimRight(line, "\r\n") // no copy: a line of MaxLine was copied twice here
			switch {
			case long:
				malformed++
			case len(line) > 0:
				if fn(line) != nil {
					malformed++
				}
			}
			if err == io.EOF {
				return malformed, nil
			}
			break
		}
	}
}

// ScanJSON is ScanLines over JSON lines: fn gets each line that parses as a T, the others are malformed.
func ScanJSON[T any](r io.Reader, fn func(*T)) (malformed int, err error) {
	return ScanLines(r, func(line []byte) error {
		var e T
		if err := json.Unmarshal(line, &e); err != nil {
			return err
		}
		fn(&e)
		return nil
	})
}

// Line renders one line of agent a's conversation file as watch prints it (Render), "" for a line that is not a
// message (metadata, Gemini's rewrites of the whole history on resume, the context the agents add themselves).
func Line(a *Agent, line []byte) string {
	ts, role, parts, err := a.Files.Line(line)
	if err != nil || role == "" || len(parts) == 0 {
		return ""
	}
	return Render(ts, "["+a.Name+"] "+role, parts)
}

// The times watch prints: the clock for a message of today, the date first for an older one (a conversation read
// with --from-start spans days).
const (
	StampToday = "15:04:05"
	StampDated = "2006-01-02 15:04:05"
)

// MaxWatchParts bounds the parts a reader makes of one line for watch (Files.Line): Render shows 200 characters
// of them, which fewer parts fill, and a line can hold a million.
const MaxWatchParts = 256

// Render is one line of watch: the time, who speaks, then the text or the tool call, cut at 200 characters.
func Render(ts time.Time, who string, parts []string) string {
	stamp := "--:--:--"
	if !ts.IsZero() {
		stamp = Stamp(ts, time.Now())
	}
	text := words(parts, 200)
	if len(text) > 200 {
		text = append(text[:199], '…')
	}
	return fmt.Sprintf("%s %-9s %s", stamp, who, string(text))
}

// words are parts' words (unicode.IsSpace between them) joined by single spaces, as characters, and no more of
// them than past max: a part can hold a whole line's text (MegaBytes), which converting and splitting whole took
// many times its size.
func words(parts []string, max int) []rune {
	var out []rune
	space := false
	for _, p := range parts {
		space = true // parts are words apart
		for _, r := range p {
			if unicode.IsSpace(r) {
				space = true
				continue
			}
			if space && len(out) > 0 {
				out = append(out, ' ')
			}
			space = false
			if out = append(out, r); len(out) > max {
				return out
			}
		}
	}
	return out
}

// Stamp is ts as watch prints it on day now: the clock alone for a time of that (local) day, else the date too.
func Stamp(ts, now time.Time) string {
	ts, now = ts.Local(), now.Local()
	if y, m, d := ts.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return ts.Format(StampToday)
	}
	return ts.Format(StampDated)
}

// Call renders a tool call, its arguments cut at 80 characters.
func Call(name string, args any) string {
	b, _ := json.Marshal(args)
	if s, ok := args.(string); ok {
		b = []byte(s) // Codex gives the arguments as a JSON string
	}
	if r := []rune(string(b)); len(r) > 80 {
		b = []byte(string(r[:79]) + "…")
	}
	return fmt.Sprintf("→ %s(%s)", name, b)
}

// Texts are ts trimmed, the empty ones left out.
func Texts(ts []string) []string {
	var out []string
	for _, t := range ts {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}
