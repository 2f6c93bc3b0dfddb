package text

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Safe returns s as it may reach a terminal: every control character but newline and tab (ESC of a CSI or an
// OSC 52 sequence, NUL, CR, DEL, the C1 controls) is shown as \xNN, the characters that reorder or hide text
// (bidi overrides, zero-width ones) as \uNNNN, invalid UTF-8 as U+FFFD; "\r\n" is a newline. The result is at
// most about limit bytes (limit <= 0: no bound), a cut marked with how much was left out.
func Safe(s string, limit int) string { return clean(s, limit, true) }

// OneLine is Safe on one line: every run of white space (newlines too) is one space, the ends trimmed.
func OneLine(s string, limit int) string { return clean(s, limit, false) }

func clean(s string, limit int, multiline bool) string {
	var b strings.Builder
	b.Grow(min(len(s), max(limit, 0)+16))
	space := false // a run of white space pending (one line only)
	for i := 0; i < len(s); {
		if limit > 0 && b.Len() >= limit {
			fmt.Fprintf(&b, "… [%d more bytes]", len(s)-i)
			break
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if !multiline && (r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f' || r == 0x85 || r == 0xa0 || r == 0x2028 || r == 0x2029) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteRune(utf8.RuneError)
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r == '\r' && i < len(s) && s[i] == '\n':
			// the newline follows
		case r < 0x20 || r >= 0x7f && r < 0xa0:
			fmt.Fprintf(&b, `\x%02x`, r)
		case hidden(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// hidden reports the characters that change how the text around them shows: bidi embeddings, overrides and
// isolates (a line that reads other than it runs), zero-width ones, the line and paragraph separators.
func hidden(r rune) bool {
	return r >= 0x200b && r <= 0x200f || r >= 0x2028 && r <= 0x202e || r >= 0x2060 && r <= 0x2069 || r == 0xfeff
}
