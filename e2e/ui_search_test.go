package e2e

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUISearchLandsOnHit: a needle typed into #search finds the one entry that holds it, among many, and the hit's
// link lands on that entry (the URL's fragment #eN names it, and it holds the needle).
func TestUISearchLandsOnHit(t *testing.T) {
	chromiumPath(t)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ok(t, store, "new", "s2")
	const needle = "quetzalcoatlus"
	var lines []string
	for i := range 20 {
		lines = append(lines, promptLine(t, fmt.Sprintf("question %d about the build", i)), replyLine(t, fmt.Sprintf("answer %d about the build", i)))
	}
	lines[27] = replyLine(t, "the "+needle+" was the largest flying animal")
	const uuid = "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d"
	writeTranscript(t, store, "s1", uuid, lines...)
	writeTranscript(t, store, "s2", "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a", promptLine(t, "nothing to see here"), replyLine(t, "indeed"))

	u := startUI(t, store)
	b := newBrowser(t)
	b.login(t, u)
	b.do(t, chromedp.SendKeys(chromedp.CSS(`#search input[name="q"]`), needle+"\n"),
		chromedp.WaitVisible(chromedp.CSS(`#hits a.hit`)))
	hits := eval[[]string](t, b, `[...document.querySelectorAll('#hits a.hit')].map(a => a.href)`)
	require.Len(t, hits, 1, "one entry holds the needle: %v", hits)
	h, err := url.Parse(hits[0])
	require.NoError(t, err)
	assert.Equal(t, u.base+"/s/s1/c/claude/"+uuid, "http://"+h.Host+h.Path, "the hit links to its conversation")
	require.True(t, strings.HasPrefix(h.Fragment, "e"), "the hit links to an entry: %s", hits[0])

	b.do(t, chromedp.Click(chromedp.CSS(`#hits a.hit`)), chromedp.WaitVisible(chromedp.CSS(`#conversation .entry`)))
	hash := eval[string](t, b, `location.hash`)
	assert.Equal(t, "#"+h.Fragment, hash, "the page landed on the hit's entry")
	landed := eval[string](t, b, `(document.getElementById(location.hash.slice(1)) || {innerText: ''}).innerText`)
	assert.Contains(t, landed, needle, "the entry the link names holds the needle")
	assert.Equal(t, "e28", h.Fragment, "the needle is the 28th entry")
}
