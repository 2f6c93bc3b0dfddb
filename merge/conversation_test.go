package merge

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func msg(uuid, parent string, sec int) string {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	return fmt.Sprintf(`{"parentUuid":%s,"uuid":"%s","timestamp":"2026-12-03T10:00:%02dZ","message":"%s"}`+"\n", p, uuid, sec, uuid)
}

// Two machines carried on from the same turn: the later branch is linked after the earlier one, so following the
// links back from the newest line passes every turn.
func TestConversationLinksBranches(t *testing.T) {
	shared := msg("u1", "", 1) + msg("a1", "u1", 2)
	a := shared + msg("u2", "a1", 3) + msg("a2", "u2", 4)
	b := shared + msg("u3", "a1", 5) + msg("a3", "u3", 6)
	got := Conversation([]byte(a), []byte(b))
	assert.Equal(t, got, Conversation([]byte(b), []byte(a)), "the same bytes whichever copy is whose")
	want := shared + msg("u2", "a1", 3) + msg("a2", "u2", 4) + msg("u3", "a2", 5) + msg("a3", "u3", 6)
	assert.Equal(t, want, string(got))
	assert.Equal(t, string(got), string(Conversation(got, got)), "joining the join with itself changes nothing")
	// The chain from the newest line back reaches the first.
	parent := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(got)), "\n") {
		var u, p string
		fmt.Sscanf(l[strings.Index(l, `"uuid":"`)+8:], "%2s", &u)
		if i := strings.Index(l, `"parentUuid":"`); i >= 0 {
			fmt.Sscanf(l[i+14:], "%2s", &p)
		}
		parent[u] = p
	}
	n := 0
	for u := "a3"; u != ""; u = parent[u] {
		n++
	}
	assert.Equal(t, 6, n, "every message is on the newest line's chain")
}

// Lines that do not link (other agents' files, Claude's summaries) come out as Lines gives them.
func TestConversationLeavesOtherLines(t *testing.T) {
	a := []byte(`{"type":"summary"}` + "\n" + `{"timestamp":"2026-12-03T10:00:01Z","x":1}` + "\n")
	b := []byte(`{"type":"summary"}` + "\n" + `{"timestamp":"2026-12-03T10:00:02Z","x":2}` + "\n")
	assert.Equal(t, Lines(a, b), Conversation(a, b))
}

// FuzzConversation: the join is the same bytes whichever copy is whose, has as many lines as Lines gives, changes
// only links, and a join joined with itself is itself.
func FuzzConversation(f *testing.F) {
	shared := msg("u1", "", 1) + msg("a1", "u1", 2)
	f.Add([]byte(shared+msg("u2", "a1", 3)), []byte(shared+msg("u3", "a1", 4)))
	f.Add([]byte("a\nb\n"), []byte("a\nc\n"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		j := Conversation(a, b)
		if !bytes.Equal(j, Conversation(b, a)) {
			t.Fatalf("not symmetric:\n%q\n%q", j, Conversation(b, a))
		}
		l := Lines(a, b)
		if len(split(j)) != len(split(l)) {
			t.Fatalf("%d lines, Lines gives %d", len(split(j)), len(split(l)))
		}
		if !bytes.Equal(Conversation(j, j), j) {
			t.Fatalf("a join joined with itself changed")
		}
	})
}
