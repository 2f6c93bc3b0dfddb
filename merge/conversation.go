package merge

import (
	"bytes"
	"encoding/json"
)

// Conversation is Lines for a conversation whose lines link each to the one before by "parentUuid" (Claude's
// transcripts): where both copies carried on from the same line, the line that begins the later branch is linked
// to the earlier branch's last line instead, so the agent, which follows the links back from the newest line,
// shows every turn of both. Only a line past the copies' shared start that links into that start, to a line that
// already has a later line linked to it, is changed, and only its parentUuid; the result is the same whichever
// copy is a, and a join of a joined file with itself changes nothing.
func Conversation(a, b []byte) []byte {
	joined := Lines(a, b)
	la, lb := split(a), split(b)
	shared := 0
	for shared < len(la) && shared < len(lb) && bytes.Equal(la[shared], lb[shared]) {
		shared++
	}
	lines := split(joined)
	if shared == len(lines) {
		return joined
	}
	inShared := map[string]bool{}
	hasChild := map[string]bool{}
	last := ""
	out := make([]byte, 0, len(joined)+64)
	for i, l := range lines {
		var v struct {
			UUID   string  `json:"uuid"`
			Parent *string `json:"parentUuid"`
		}
		if json.Unmarshal(l, &v) == nil && v.UUID != "" {
			if v.Parent != nil {
				p := *v.Parent
				if i >= shared && inShared[p] && hasChild[p] && last != "" && p != last {
					if relinked, ok := relink(l, p, last); ok {
						l, p = relinked, last
					}
				}
				hasChild[p] = true
			}
			if i < shared {
				inShared[v.UUID] = true
			}
			last = v.UUID
		}
		out = append(append(out, l...), '\n')
	}
	return out
}

// relink is line l with its "parentUuid" from changed to to, the rest of its bytes as they were.
func relink(l []byte, from, to string) ([]byte, bool) {
	old, _ := json.Marshal(from)
	nu, _ := json.Marshal(to)
	key := []byte(`"parentUuid":`)
	i := bytes.Index(l, append(key, old...))
	if i < 0 {
		return l, false
	}
	out := append([]byte{}, l[:i+len(key)]...)
	out = append(out, nu...)
	return append(out, l[i+len(key)+len(old):]...), true
}

// MaxLines bounds the lines of each copy a join takes: the join holds a few words per line, so a copy of millions
// of tiny lines (which no agent writes: a 64 MiB Claude transcript is some 30,000 lines) would take gigabytes. A
// caller keeps both copies instead, as for any file changed on both sides.
const MaxLines = 250_000

// Joinable reports whether copies a and b are within MaxLines each.
func Joinable(a, b []byte) bool {
	return bytes.Count(a, []byte("\n")) <= MaxLines && bytes.Count(b, []byte("\n")) <= MaxLines
}
