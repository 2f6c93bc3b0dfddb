package merge

import (
	"bytes"
	"encoding/json"
	"time"
)

// Lines is the union of two copies a and b of an append-only JSONL file: every line of either, each copy's order
// kept. The lines they share from the start come first; then the lines each added are interleaved by the time they
// carry ("timestamp", RFC 3339, or "time", milliseconds since the epoch: what the agents write), ties and lines
// without one ordered by their bytes, and a line that comes next in both copies is written once. The rule looks
// only at the lines, never at which copy is whose, so Lines(a, b) and Lines(b, a) are the same bytes: two
// machines that merge each other's copy end up holding the same file. For an agent's transcript, whose lines are
// each its own (an id, a time) and written in the order of their times, that is every line once, in time order;
// a line both copies added out of that order is kept twice rather than either copy's order broken. An unfinished
// last line (no newline) is kept as a line of its own, ended.
func Lines(a, b []byte) []byte {
	la, lb := split(a), split(b)
	n := 0
	for n < len(la) && n < len(lb) && bytes.Equal(la[n], lb[n]) {
		n++
	}
	out := make([]byte, 0, max(len(a), len(b))+min(len(a), len(b))/4)
	for _, l := range la[:n] {
		out = append(append(out, l...), '\n')
	}
	ra, rb := withTimes(la[n:]), withTimes(lb[n:])
	for len(ra) > 0 || len(rb) > 0 {
		var l line
		switch {
		case len(rb) == 0 || len(ra) > 0 && ra[0].before(rb[0]):
			l, ra = ra[0], ra[1:]
		case len(ra) == 0 || rb[0].before(ra[0]):
			l, rb = rb[0], rb[1:]
		default: // the same line next in both
			l, ra, rb = ra[0], ra[1:], rb[1:]
		}
		out = append(append(out, l.b...), '\n')
	}
	return out
}

// line is a line and the time it carries (zero when none).
type line struct {
	b  []byte
	at time.Time
}

// before orders two lines by their times, then their bytes.
func (l line) before(o line) bool {
	if !l.at.Equal(o.at) {
		return l.at.Before(o.at)
	}
	return bytes.Compare(l.b, o.b) < 0
}

func withTimes(ls [][]byte) []line {
	out := make([]line, len(ls))
	for i, l := range ls {
		out[i] = line{l, timeOf(l)}
	}
	return out
}

// timeOf is the time a JSON line carries at its top level: "timestamp" (RFC 3339: Claude, Codex, Qwen, Copilot)
// or "time" (milliseconds: Kimi); zero for a line that is not such an object.
func timeOf(l []byte) time.Time {
	var v struct {
		Timestamp string          `json:"timestamp"`
		Time      json.RawMessage `json:"time"`
	}
	if json.Unmarshal(l, &v) != nil {
		return time.Time{}
	}
	if t, err := time.Parse(time.RFC3339Nano, v.Timestamp); err == nil {
		return t
	}
	var ms int64
	if json.Unmarshal(v.Time, &ms) == nil && ms > 0 {
		return time.UnixMilli(ms)
	}
	return time.Time{}
}

// split is b's lines without their newlines; an unfinished last one counts.
func split(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, b)
			break
		}
		out = append(out, b[:i])
		b = b[i+1:]
	}
	return out
}
