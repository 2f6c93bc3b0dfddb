package ui

import (
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var hitRE = regexp.MustCompile(`<a class="hit" href="([^"]+)"`)

func TestSearchHitLinksToItsEntry(t *testing.T) {
	st := newStore(t)
	dir := newSession(t, st, "found", nil)
	const conv = "33333333-0000-4000-8000-000000000001"
	var b strings.Builder
	for i := 1; i <= 30; i++ {
		b.WriteString(claudeLine(conv, "user", "an ordinary prompt", 2*i-1))
		b.WriteString(claudeLine(conv, "assistant", "an ordinary reply", 2*i))
	}
	b.WriteString(claudeLine(conv, "assistant", "the walrus needle <is> here", 61))
	appendFile(t, transcript(t, dir, conv), b.String())
	s := serve(t, st)
	resp, body := s.get(t, "/search?q=walrus")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, `id="hits"`)
	assert.Contains(t, body, "<mark>walrus</mark>")
	assert.Contains(t, body, "&lt;is&gt;", "the snippet escaped")
	hits := hitRE.FindAllStringSubmatch(body, -1)
	require.Len(t, hits, 1)
	link := html.UnescapeString(hits[0][1])
	page, anchor, ok := strings.Cut(link, "#")
	require.True(t, ok, link)
	assert.Equal(t, "/s/found/c/claude/"+conv, page)
	assert.Equal(t, "e61", anchor)
	_, conversation := s.get(t, page)
	i := strings.Index(conversation, `id="`+anchor+`"`)
	require.GreaterOrEqual(t, i, 0)
	entry, _, _ := strings.Cut(conversation[i:], "</article>")
	assert.Contains(t, entry, "walrus needle", "the anchor is the entry that matched")
}

func TestSearchOfAQueryFTS5CannotRead(t *testing.T) {
	s := serve(t, newStore(t))
	resp, body := s.get(t, `/search?q=%22unterminated`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, body, `class="error"`)
	resp, body = s.get(t, "/search?q=")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.NotContains(t, body, `id="hits"`)
}

func TestSearchShowsWhyAQueryIsRefused(t *testing.T) {
	st := newStore(t)
	dir := newSession(t, st, "found", nil)
	const conv = "33333333-0000-4000-8000-000000000002"
	appendFile(t, transcript(t, dir, conv), claudeLine(conv, "user", "an ordinary prompt", 1))
	s := serve(t, st)
	resp, body := s.get(t, `/search?q=%22unterminated`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, body, html.EscapeString(`not a query SQLite FTS5 can read: "\"unterminated": unterminated string`), "the refusal, as sessionfs search says it")
	assert.NotContains(t, body, "Nothing matches.")
	resp, body = s.get(t, "/search?q=walrus")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, "Nothing matches.", "a good query that matched nothing")
	assert.NotContains(t, body, `class="error"`)
}
