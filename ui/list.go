package ui

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/layout"
)

// pageSize is how many sessions a page of the list shows: a store of 10,000 renders in a few milliseconds.
const pageSize = 500

var sorts = []string{"id", "created", "active", "size"}

// listPage is the session list.
type listPage struct {
	page
	Rows               []listRow
	Count              string // how many are shown, of how many matching and in the store
	Err                string // why the filters are refused: no list then
	Label, Agent, Sort string
	AgentNames, Sorts  []string
	Prev, Next         string
	Live               string // the events URL, with the store's stamp as the page shows it
	Filtered           bool
}

// listRow is one session of the list.
type listRow struct {
	ID, Href, Damaged   string
	Labels              []string
	Created, CreatedISO string
	Active, ActiveISO   string
	Size                string
	Agents, Runs        []string
	Running             bool
	LastExit            string
}

// list is the store's sessions, from the sessions index (Store.Listing): filtered, sorted, a page of them.
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := listPage{page: page{Title: "Sessions"}, Label: q.Get("label"), Agent: q.Get("agent"), Sort: q.Get("sort"),
		AgentNames: all.Names(), Sorts: sorts}
	if p.Sort == "" {
		p.Sort = "id"
	}
	if !slices.Contains(sorts, p.Sort) {
		s.errorPage(w, http.StatusBadRequest, "sort by id, created, active or size")
		return
	}
	if err := checkLabel(p.Label); err != nil {
		p.Err = one(err.Error(), maxLine) // a control character of the URL's shown, not sent
		s.render(w, http.StatusBadRequest, "list", p)
		return
	}
	stamp := s.storeStamp() // before the listing: a change while it lists is sent again
	listed, err := s.o.Store.Listing(false)
	if err != nil {
		s.errorPage(w, http.StatusInternalServerError, "the sessions could not be listed: "+err.Error())
		return
	}
	p.Live = base + "/events?stamp=" + strconv.FormatUint(stamp, 16)
	kept := filterSessions(listed, p.Label, p.Agent)
	p.Filtered = len(kept) < len(listed)
	sortSessions(kept, p.Sort)
	pageN, _ := strconv.Atoi(q.Get("page"))
	pageN = max(pageN, 1)
	from := min((pageN-1)*pageSize, len(kept))
	to := min(from+pageSize, len(kept))
	if from > 0 {
		p.Prev = pageURL(q, pageN-1)
	}
	if to < len(kept) {
		p.Next = pageURL(q, pageN+1)
	}
	p.Count = countText(to-from, len(kept), len(listed))
	runs := activeRuns(s.o.Store)
	p.Rows = make([]listRow, 0, to-from)
	for _, l := range kept[from:to] {
		p.Rows = append(p.Rows, rowOf(l, runs[l.ID]))
	}
	if q.Get("partial") == "rows" {
		s.render(w, http.StatusOK, "rows", p)
		return
	}
	s.render(w, http.StatusOK, "list", p)
}

func pageURL(q url.Values, n int) string {
	q2 := url.Values{}
	for k, v := range q {
		if k != "partial" {
			q2[k] = v
		}
	}
	q2.Set("page", strconv.Itoa(n))
	return base + "/?" + q2.Encode()
}

// checkLabel refuses a label filter (K=V, or K) that breaks the rule sessionfs label and new --label check, in
// their words: an empty list would not say why nothing matched. (A key set before the rule is refused here too.)
func checkLabel(label string) error {
	if label == "" {
		return nil
	}
	k, v, _ := strings.Cut(label, "=")
	return layout.ValidateLabel(k, v)
}

// countText is the list's heading: shown of total, or, filtered, of how many match (and how many are shown when
// they fill more than a page).
func countText(shown, matching, total int) string {
	if matching == total {
		return fmt.Sprintf("%d of %d", shown, total)
	}
	s := fmt.Sprintf("%d of %d match", matching, total)
	if shown < matching {
		s = fmt.Sprintf("%d shown, %s", shown, s)
	}
	return s
}

// filterSessions keeps the sessions with label (K=V, or K) and with a conversation of agent.
func filterSessions(in []layout.Listed, label, agent string) []layout.Listed {
	if label == "" && agent == "" {
		return in
	}
	k, v, hasValue := strings.Cut(label, "=")
	var out []layout.Listed
	for _, l := range in {
		if label != "" {
			got, set := l.Labels[k]
			if !set || hasValue && got != v {
				continue
			}
		}
		if agent != "" && l.Agents[agent] == 0 {
			continue
		}
		out = append(out, l)
	}
	return out
}

// sortSessions orders by id, or the newest (created, active) or largest first, as ls does.
func sortSessions(l []layout.Listed, by string) {
	slices.SortStableFunc(l, func(a, b layout.Listed) int {
		switch by {
		case "created":
			return b.Created.Compare(a.Created)
		case "active":
			return b.LastActivity.Compare(a.LastActivity)
		case "size":
			return cmp.Compare(b.Size, a.Size)
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// activeRuns are the runs in progress by session.
func activeRuns(st *layout.Store) map[string][]layout.ActiveRun {
	runs, _ := st.ActiveRuns() // none shown when the locks cannot be read
	out := map[string][]layout.ActiveRun{}
	for _, r := range runs {
		out[r.ID] = append(out[r.ID], r)
	}
	return out
}

func rowOf(l layout.Listed, runs []layout.ActiveRun) listRow {
	row := listRow{ID: l.ID, Href: href("s", l.ID), Damaged: one(l.Damaged, maxLine),
		Created: when(l.Created), CreatedISO: iso(l.Created), Active: when(l.LastActivity), ActiveISO: iso(l.LastActivity),
		Size: size(l.Size), Labels: labelList(l.Labels), Running: len(runs) > 0, LastExit: lastExit(l.Runs)}
	for _, name := range all.Names() {
		if n := l.Agents[name]; n > 0 {
			row.Agents = append(row.Agents, fmt.Sprintf("%s %d", name, n))
		}
	}
	for _, r := range runs {
		where := one(r.Run.Backend, maxName)
		if r.Run.Host != "" {
			where += " on " + one(r.Run.Host, maxName)
		}
		row.Runs = append(row.Runs, fmt.Sprintf("#%d %s since %s", r.N, where, when(r.Run.Start)))
	}
	return row
}

// labelList is a session's labels as K=V, sorted.
func labelList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		if v == "" {
			out = append(out, one(k, maxName))
		} else {
			out = append(out, one(k+"="+v, maxName))
		}
	}
	slices.Sort(out)
	return out
}

// lastExit is the exit code of the last run that ended, "" when none did.
func lastExit(runs []layout.Run) string {
	for i := len(runs) - 1; i >= 0; i-- {
		if !runs[i].End.IsZero() && !runs[i].Imported { // an archive's runs ran for another store
			return strconv.Itoa(runs[i].ExitCode)
		}
	}
	return ""
}
