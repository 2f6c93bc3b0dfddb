package search

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/layout"
)

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.Local)
	for in, want := range map[string]time.Time{
		"90m":              now.Add(-90 * time.Minute),
		"36h":              now.Add(-36 * time.Hour),
		"7d":               now.Add(-7 * 24 * time.Hour),
		"2w":               now.Add(-14 * 24 * time.Hour),
		"2026-11-25":       time.Date(2026, 11, 25, 0, 0, 0, 0, time.Local),
		"2026-11-25T14:00": time.Date(2026, 11, 25, 14, 0, 0, 0, time.Local),
	} {
		got, err := ParseSince(in, now)
		require.NoError(t, err, in)
		assert.True(t, want.Equal(got), "%s: %v", in, got)
	}
	for _, bad := range []string{"yesterday", "-3d", "7x"} {
		_, err := ParseSince(bad, now)
		assert.Error(t, err, bad)
	}
}

func TestMarked(t *testing.T) {
	assert.Equal(t, "a needle in a haystack", marked("a needle in\n\ta haystack", [][2]int{{2, 8}}, false))
	assert.Equal(t, "a \x1b[1;31mneedle\x1b[0m here", marked("a needle here", [][2]int{{2, 8}}, true))
}

// Run: labels choose the sessions, -l prints ids, --json hits; a hit's fields a session wrote reach the terminal
// as text.
func TestRun(t *testing.T) {
	s := newStore(t, "web", "api")
	_, err := s.Update("web", func(m *layout.Meta) error { return m.EditLabels(map[string]string{"team": "web"}, nil) })
	require.NoError(t, err)
	appendTo(t, transcript(s, "web", theConv), claudeLine("user", "the heron", 0))
	appendTo(t, transcript(s, "api", theConv), claudeLine("user", "another heron", 0))
	run := func(o Options) string {
		var b bytes.Buffer
		o.Warn = func(m string) { t.Log(m) }
		require.NoError(t, Run(&b, s, o))
		return b.String()
	}
	assert.Equal(t, "api\nweb\n", sortedLines(run(Options{Query: Query{Match: "heron", Limit: -1}, IDs: true})))
	assert.Equal(t, "web\n", run(Options{Query: Query{Match: "heron"}, IDs: true, Labels: []string{"team=web"}}))
	assert.Equal(t, "web\n", run(Options{Query: Query{Match: "heron"}, IDs: true, Labels: []string{"team"}}))
	var none bytes.Buffer
	assert.ErrorIs(t, Run(&none, s, Options{Query: Query{Match: "heron"}, IDs: true, Labels: []string{"team=api"}}), ErrNoMatch,
		"nothing matched: sessionfs search exits 1, as grep")
	assert.Empty(t, none.String())
	none.Reset()
	assert.ErrorIs(t, Run(&none, s, Options{Query: Query{Match: "walrus"}, JSON: true}), ErrNoMatch)
	assert.Equal(t, "[]\n", none.String(), "--json prints an empty list")
	var hits []Hit
	require.NoError(t, json.Unmarshal([]byte(run(Options{Query: Query{Match: "heron", Sessions: []string{"api"}}, JSON: true})), &hits))
	require.Len(t, hits, 1)
	assert.Equal(t, "another heron", hits[0].Snippet)
	assert.Equal(t, "web  claude  "+theConv+"  "+at.Local().Format("2006-01-02 15:04")+"  /session/workspace  prompt\n    the heron\n",
		run(Options{Query: Query{Match: "the heron"}}))

	assert.ErrorIs(t, Run(&bytes.Buffer{}, s, Options{Query: Query{Match: " "}}), ErrQuery)
	assert.ErrorIs(t, Run(&bytes.Buffer{}, s, Options{Query: Query{Match: "x", Sessions: []string{"nope"}}}), layout.ErrNotFound)
	assert.Error(t, Run(&bytes.Buffer{}, s, Options{Query: Query{Match: "x", Agent: "nope"}}))
}

func sortedLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}
