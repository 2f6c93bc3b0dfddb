package ui

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/search/searchtest"
)

// manySessions is a store of n sessions of one small Claude conversation each, its index built (as the first
// ls builds it).
func manySessions(tb testing.TB, n int) *layout.Store {
	tb.Helper()
	root := tb.TempDir()
	_, err := searchtest.Make(root, n, 1, 2000)
	require.NoError(tb, err)
	st, err := layout.OpenStore(root)
	require.NoError(tb, err)
	tb.Cleanup(func() { st.Close() })
	_, err = st.Listing(false)
	require.NoError(tb, err)
	return st
}

var rowRE = regexp.MustCompile(`<tr data-session="([^"]+)"`)

func TestListOfTenThousandSessionsIsPaged(t *testing.T) {
	if testing.Short() {
		t.Skip("makes 10,000 sessions")
	}
	s := serve(t, manySessions(t, 10000))
	resp, body := s.get(t, "/")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	rows := rowRE.FindAllStringSubmatch(body, -1)
	require.Len(t, rows, pageSize)
	assert.Equal(t, "search00000", rows[0][1])
	assert.Contains(t, body, "500 of 10000")
	assert.Contains(t, body, `href="/?page=2"`)
	assert.Contains(t, body, "claude 1")
	_, body = s.get(t, "/?page=20")
	rows = rowRE.FindAllStringSubmatch(body, -1)
	require.Len(t, rows, pageSize)
	assert.Equal(t, "search09999", rows[len(rows)-1][1])
	assert.NotContains(t, body, "next page")
}

func TestListFiltersAndSorts(t *testing.T) {
	st := newStore(t)
	newSession(t, st, "a-web", map[string]string{"team": "web"})
	time.Sleep(10 * time.Millisecond) // created times apart, for the order by created
	newSession(t, st, "b-db", map[string]string{"team": "db"})
	dir := newSession(t, st, "c-none", nil)
	const conv = "22222222-0000-4000-8000-000000000001"
	appendFile(t, transcript(t, dir, conv), claudeLine(conv, "user", "hello", 1))
	s := serve(t, st)
	ids := func(path string) []string {
		resp, body := s.get(t, path)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		var out []string
		for _, m := range rowRE.FindAllStringSubmatch(body, -1) {
			out = append(out, m[1])
		}
		return out
	}
	assert.Equal(t, []string{"a-web", "b-db", "c-none"}, ids("/"))
	assert.Equal(t, []string{"a-web"}, ids("/?label=team=web"))
	assert.Equal(t, []string{"a-web", "b-db"}, ids("/?label=team"))
	assert.Equal(t, []string{"c-none"}, ids("/?agent=claude"))
	assert.Equal(t, []string{"c-none", "b-db", "a-web"}, ids("/?sort=created"))
	resp, _ := s.get(t, "/?sort=nonsense")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

func TestListShowsARunInProgress(t *testing.T) {
	st := newStore(t)
	newSession(t, st, "busy", nil)
	lease, err := st.TryLease("busy", layout.ThisProcess())
	require.NoError(t, err)
	defer lease.Release()
	_, err = st.Update("busy", func(m *layout.Meta) error {
		m.Runs = append(m.Runs, layout.Run{N: m.NextRunNumber(), Backend: "docker", Host: "<b>h</b>", Start: time.Now()})
		return nil
	})
	require.NoError(t, err)
	s := serve(t, st)
	_, body := s.get(t, "/")
	assert.Contains(t, body, `<tr data-session="busy" class="running">`)
	assert.Contains(t, body, "docker on &lt;b&gt;h&lt;/b&gt; since")
}

// BenchmarkList10000 is the list's page of a store of 10,000 sessions, as the browser asks for it.
func BenchmarkList10000(b *testing.B) {
	s := serve(b, manySessions(b, 10000))
	b.ResetTimer()
	for b.Loop() {
		resp, err := s.client.Get(s.ts.URL + "/")
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatal(resp.Status)
		}
	}
}

// BenchmarkListing10000 is what the list's page costs below it: the sessions index brought up to date
// (Store.Listing, as ls reads it).
func BenchmarkListing10000(b *testing.B) {
	st := manySessions(b, 10000)
	b.ResetTimer()
	for b.Loop() {
		if _, err := st.Listing(false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConversationFirstByte10MB is the time to the first byte of a 10 MB conversation's page (ns/op), and
// to its last (ms-whole/op).
func BenchmarkConversationFirstByte10MB(b *testing.B) {
	root := b.TempDir()
	_, err := searchtest.Make(root, 1, 1, 10<<20)
	require.NoError(b, err)
	st, err := layout.OpenStore(root)
	require.NoError(b, err)
	defer st.Close()
	s := serve(b, st)
	page := fmt.Sprintf("/s/search00000/c/claude/5ea4c400-0000-4000-8000-%012d", 0)
	var whole time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		resp, err := s.client.Get(s.ts.URL + page)
		if err != nil {
			b.Fatal(err)
		}
		one := make([]byte, 1)
		if _, err := io.ReadFull(resp.Body, one); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		rest, _ := io.ReadAll(resp.Body)
		whole += time.Since(start)
		resp.Body.Close()
		if !strings.Contains(string(rest), `id="end"`) {
			b.Fatal("the page did not end")
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(whole.Milliseconds())/float64(b.N), "ms-whole/op")
}

func TestListRefusesALabelTheCLIRefuses(t *testing.T) {
	st := newStore(t)
	newSession(t, st, "a-web", map[string]string{"team": "web"})
	s := serve(t, st)
	resp, body := s.get(t, "/?label=bad+%3Cb%3Elabel")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	want := layout.ValidateLabel("bad <b>label", "")
	require.Error(t, want)
	assert.Contains(t, body, `<p class="error">`+html.EscapeString(want.Error())+`</p>`, "the CLI's words, escaped")
	assert.NotContains(t, body, "No session matches")
	assert.NotContains(t, body, `id="sessions"`, "no list, nor its live updates")
	assert.Contains(t, body, `value="bad &lt;b&gt;label"`, "the filter kept, to fix")
	resp, _ = s.get(t, "/?label=team=bad+value")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "a value the CLI refuses")
}

func TestListCountsTheWholeStore(t *testing.T) {
	st := newStore(t)
	newSession(t, st, "a-web", map[string]string{"team": "web"})
	newSession(t, st, "b-db", map[string]string{"team": "db"})
	newSession(t, st, "c-none", nil)
	s := serve(t, st)
	_, body := s.get(t, "/?label=team=web")
	assert.Contains(t, body, "<small>1 of 3 match</small>")
	_, body = s.get(t, "/?label=team")
	assert.Contains(t, body, "<small>2 of 3 match</small>")
	_, body = s.get(t, "/")
	assert.Contains(t, body, "<small>3 of 3</small>")
}

func TestListCountOfAFilteredPage(t *testing.T) {
	assert.Equal(t, "500 of 10000", countText(500, 10000, 10000))
	assert.Equal(t, "7 of 10 match", countText(7, 7, 10))
	assert.Equal(t, "500 shown, 700 of 10000 match", countText(500, 700, 10000))
	assert.Equal(t, "200 shown, 700 of 10000 match", countText(200, 700, 10000), "the last page")
	assert.Equal(t, "0 of 10 match", countText(0, 0, 10))
}
