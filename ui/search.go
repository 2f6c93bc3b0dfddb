package ui

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sessionfs/sessionfs/agents/text"
	"github.com/sessionfs/sessionfs/search"
)

// maxHits is how many hits a search page shows.
const maxHits = 50

type searchPage struct {
	page
	Hits         []hitView
	Err, Warning string
}

type hitView struct {
	Session, Agent, Conversation, Kind, Time, Href string
	Snippet                                        []snippetPart
}

type snippetPart struct {
	Text string
	Mark bool
}

// search answers ?q= from the store's search index (caught up first, as sessionfs search does), each hit a link
// to its entry in its conversation's page.
func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	p := searchPage{page: page{Title: "Search", Query: q}}
	if q == "" {
		s.render(w, http.StatusOK, "search", p)
		return
	}
	var warnings []string
	ix, err := search.Open(s.o.Store, func(msg string) { warnings = append(warnings, msg) })
	if err != nil {
		p.Err = "The search index could not be opened: " + text.OneLine(err.Error(), maxLine)
		s.render(w, http.StatusInternalServerError, "search", p)
		return
	}
	defer ix.Close()
	ix.CatchUpOrWarn(nil) // its warning is among warnings (Open's)
	res, err := ix.Search(search.Query{Match: q, Limit: maxHits})
	if errors.Is(err, search.ErrQuery) {
		p.Err = text.OneLine(strings.TrimPrefix(err.Error(), "search: "), maxLine)
		s.render(w, http.StatusBadRequest, "search", p)
		return
	}
	if err != nil {
		p.Err = "The search failed: " + text.OneLine(err.Error(), maxLine)
		s.render(w, http.StatusInternalServerError, "search", p)
		return
	}
	if !res.Ranked && len(res.Hits) > 0 {
		warnings = append(warnings, "more than "+strconv.Itoa(search.RankLimit)+" entries match: the last indexed are shown first, unranked (more words or a \"phrase\" narrow it)")
	}
	p.Warning = text.OneLine(strings.Join(warnings, "; "), maxLine)
	places := s.entryNumbers(res.Hits)
	for _, h := range res.Hits {
		v := hitView{Session: h.Session, Agent: h.Agent, Conversation: text.OneLine(h.Conversation, maxName),
			Kind: h.Kind, Snippet: snippetParts(h.Snippet, h.Marks)}
		if !h.Time.IsZero() {
			v.Time = when(h.Time)
		}
		v.Href = href("s", h.Session, "c", h.Agent, h.Conversation)
		if n, ok := places[placeOf(h)]; ok {
			v.Href += "#e" + strconv.Itoa(n)
		} else if marked := firstMark(h.Snippet, h.Marks); marked != "" {
			// Not found where the index said (the conversation changed since): the browser finds the text.
			v.Href += "#:~:text=" + url.PathEscape(marked)
		}
		p.Hits = append(p.Hits, v)
	}
	s.render(w, http.StatusOK, "search", p)
}

// place is where an entry is in its conversation, as the index records it.
type place struct {
	session, agent, conv, sub, kind string
	off                             int64
}

func placeOf(h search.Hit) place {
	return place{h.Session, h.Agent, h.Conversation, h.Subagent, h.Kind, h.Offset}
}

// anchorBudget bounds the bytes of conversations a search page reads to find its hits' entries: past it, a hit
// links to its conversation with its text to find (the browser's text fragment).
const anchorBudget = 64 << 20

// entryNumbers finds the number (the page's e<N>) of each hit's entry: its conversation read once, the first
// entry of the hit's line, subagent and kind.
func (s *Server) entryNumbers(hits []search.Hit) map[place]int {
	out := map[place]int{}
	want := map[place]bool{}
	type convKey struct{ session, agent, conv string }
	var convs []convKey
	seen := map[convKey]bool{}
	for _, h := range hits {
		want[placeOf(h)] = true
		k := convKey{h.Session, h.Agent, h.Conversation}
		if !seen[k] {
			seen[k] = true
			convs = append(convs, k)
		}
	}
	budget := int64(anchorBudget)
	for _, k := range convs {
		if budget <= 0 {
			break
		}
		sess, err := s.o.Store.OpenSession(k.session)
		if err != nil {
			continue
		}
		if a, c, err := findConversation(sess, k.agent, k.conv); err == nil && c.Size <= budget {
			budget -= c.Size
			n := 0
			_ = text.Entries(sess, a, c, func(e text.Entry) error {
				n++
				p := place{k.session, k.agent, k.conv, e.Subagent, e.Kind.String(), e.Offset}
				if _, found := out[p]; want[p] && !found {
					out[p] = n
				}
				return nil
			})
		}
		sess.Close()
	}
	return out
}

// snippetParts splits a snippet at its marks.
func snippetParts(s string, marks [][2]int) []snippetPart {
	var out []snippetPart
	at := 0
	for _, m := range marks {
		if m[0] < at || m[1] > len(s) || m[0] > m[1] {
			continue
		}
		if m[0] > at {
			out = append(out, snippetPart{Text: s[at:m[0]]})
		}
		out = append(out, snippetPart{Text: s[m[0]:m[1]], Mark: true})
		at = m[1]
	}
	if at < len(s) {
		out = append(out, snippetPart{Text: s[at:]})
	}
	return out
}

// firstMark is the first matched text of a snippet.
func firstMark(s string, marks [][2]int) string {
	for _, m := range marks {
		if m[0] >= 0 && m[0] < m[1] && m[1] <= len(s) {
			return s[m[0]:m[1]]
		}
	}
	return ""
}
