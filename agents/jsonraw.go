package agents

import (
	"encoding/json"
	"errors"
	"strings"
)

// A conversation's line can hold a list of a million tiny things (a Gemini message's tool calls, a Qwen message's
// parts): decoded into a Go slice at once, it takes tens of bytes of memory for each byte of the line. Readers
// take such a list as a RawRef and decode its elements one at a time (EachElement).

// RawRef is a JSON value as it stands in the input json.Unmarshal decodes, not copied (json.RawMessage copies
// it): it is valid only while that input is. A value that is absent leaves it nil; null is "null".
type RawRef []byte

// UnmarshalJSON keeps b, a part of the input being decoded.
func (r *RawRef) UnmarshalJSON(b []byte) error {
	*r = b
	return nil
}

// EachElement calls fn with each element of the JSON array raw, in order, as it stands in raw (no copy), and
// returns fn's first error. raw is valid JSON (a RawRef: json.Unmarshal checks all of its input before it
// decodes any); a value that is not an array (null, a string, an object) has no elements.
func EachElement(raw []byte, fn func(elem []byte) error) error {
	i := 0
	for i < len(raw) && isSpace(raw[i]) {
		i++
	}
	if i == len(raw) || raw[i] != '[' {
		return nil
	}
	depth, start, inString := 0, -1, false
	for i++; i < len(raw); i++ {
		c := raw[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch {
		case isSpace(c):
			continue
		case depth == 0 && (c == ',' || c == ']'):
			if start >= 0 {
				end := i
				for isSpace(raw[end-1]) {
					end--
				}
				if err := fn(raw[start:end]); err != nil {
					return err
				}
			}
			if c == ']' {
				return nil
			}
			start = -1
			continue
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		}
		if start < 0 {
			start = i
		}
	}
	return nil
}

// IsList reports whether raw, a JSON value, is a list.
func IsList(raw []byte) bool {
	for _, c := range raw {
		if !isSpace(c) {
			return c == '['
		}
	}
	return false
}

var errEnough = errors.New("enough")

// JoinTexts is the "text" of each element of the JSON list raw (Gemini's and Qwen's parts), joined by spaces, up
// to limit bytes (< 0: all of it): the elements are decoded one at a time, and no more of them than limit needs.
func JoinTexts(raw []byte, limit int) string {
	var b strings.Builder
	first := true
	_ = EachElement(raw, func(el []byte) error {
		var p struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(el, &p)
		if !first {
			b.WriteByte(' ')
		}
		first = false
		b.WriteString(p.Text)
		if limit >= 0 && b.Len() > limit {
			return errEnough
		}
		return nil
	})
	return Cut(b.String(), limit)
}

// Cut is s up to limit bytes (< 0: all of it), ending where a character does.
func Cut(s string, limit int) string {
	if limit < 0 || len(s) <= limit {
		return s
	}
	for limit > 0 && s[limit]&0xc0 == 0x80 {
		limit--
	}
	return s[:limit]
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
