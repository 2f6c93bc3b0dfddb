package search

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/agents/text"
	"github.com/sessionfs/sessionfs/layout"
)

// Options is what `sessionfs search` was asked.
type Options struct {
	Query
	Labels []string // sessions with label K=V, or with label K (all must hold)
	IDs    bool     // print the ids of the sessions with a match only
	JSON   bool
	Color  bool // mark the matches for a terminal
	// Reindex builds the index anew first. Progress (when not nil) is told of the conversations indexed, by it or
	// by a catch-up.
	Reindex  bool
	Progress func(done, total int)
	Warn     func(string) // nil: stderr
}

// ErrNoMatch: nothing matched the query (printed: nothing, or an empty JSON list). sessionfs search exits 1 then,
// as grep does.
var ErrNoMatch = errors.New("no match")

// Run catches the store's index up (or rebuilds it) and prints what matches o to w: ErrNoMatch when nothing does.
func Run(w io.Writer, store *layout.Store, o Options) error {
	if err := o.check(store); err != nil {
		return err
	}
	ix, err := Open(store, o.Warn)
	if err != nil {
		return err
	}
	defer ix.Close()
	ix.progress = o.Progress // a query's own catch-ups too (read)
	if o.Reindex {
		if err := ix.Reindex(o.Progress); err != nil {
			return err
		}
	} else {
		ix.CatchUpOrWarn(o.Progress)
	}
	if strings.TrimSpace(o.Match) == "" {
		ix.warnPartial(o.Sessions)
		return nil // --reindex alone
	}
	if len(o.Labels) > 0 {
		if o.Sessions, err = labelled(store, o.Labels, o.Sessions); err != nil {
			return err
		}
	}
	ix.warnPartial(o.Sessions)
	if o.IDs {
		ids, err := ix.SessionIDs(o.Query)
		if err != nil {
			return err
		}
		if o.JSON {
			err = printJSON(w, orEmpty(ids))
		}
		for _, id := range ids {
			if !o.JSON {
				fmt.Fprintln(w, id)
			}
		}
		if err == nil && len(ids) == 0 {
			err = ErrNoMatch
		}
		return err
	}
	res, err := ix.Search(o.Query)
	if err != nil {
		return err
	}
	if !res.Ranked {
		ix.warn(fmt.Sprintf("more than %d entries match %q: the last indexed are shown first, unranked (more words, a \"phrase\", --session, --agent or --since narrow it)", RankLimit, o.Match))
	}
	if o.JSON { // JSON shows every control character escaped
		err = printJSON(w, orEmpty(res.Hits))
	} else {
		for _, h := range res.Hits {
			printHit(w, h, o.Color)
		}
	}
	if err == nil && len(res.Hits) == 0 {
		err = ErrNoMatch
	}
	return err
}

// warnPartial says which of sessions (nil: all) are indexed in part: what they said past their budget is not
// found (budget.go).
func (ix *Index) warnPartial(sessions []string) {
	parts, err := ix.Partial(sessions)
	if err != nil || len(parts) == 0 {
		return
	}
	p := parts[0]
	convs := "a conversation"
	if p.Conversations > 1 {
		convs = fmt.Sprintf("%d conversations", p.Conversations)
	}
	more := ""
	if len(parts) > 1 {
		more = fmt.Sprintf(" (and %d more sessions)", len(parts)-1)
	}
	ix.warn(fmt.Sprintf("session %s is indexed in part (%s: %s): what it said past that is not found%s", p.Session, convs, p.Why, more))
}

// check refuses what cannot match anything: an empty query, an unknown agent or session.
func (o *Options) check(store *layout.Store) error {
	if strings.TrimSpace(o.Match) == "" && !o.Reindex {
		return fmt.Errorf("%w: the query is empty (sessionfs search WORDS)", ErrQuery)
	}
	if o.Agent != "" {
		if _, err := all.ByName(o.Agent); err != nil {
			return err
		}
	}
	for _, id := range o.Sessions {
		if !store.Exists(id) {
			return fmt.Errorf("%s: %w", id, layout.ErrNotFound)
		}
	}
	return nil
}

// labelled is the sessions (of within, when not nil) whose labels hold every one of want (K=V or K).
func labelled(store *layout.Store, want []string, within []string) ([]string, error) {
	ids := within
	if ids == nil {
		var err error
		if ids, err = store.IDs(); err != nil {
			return nil, err
		}
	}
	out := []string{}
	for _, id := range ids {
		m, err := store.Get(id)
		if err != nil {
			continue // gone, or its session.json damaged: no labels to match
		}
		ok := true
		for _, kv := range want {
			k, v, hasValue := strings.Cut(kv, "=")
			got, set := m.Labels[k]
			if !set || hasValue && got != v {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out, nil
}

// printHit prints a hit as two lines: where (session, agent, conversation, time, cwd, what it is), then the
// snippet, its matches in bold red on a terminal.
func printHit(w io.Writer, h Hit, color bool) {
	when := "-"
	if !h.Time.IsZero() {
		when = h.Time.Local().Format("2006-01-02 15:04")
	}
	what := h.Kind
	if h.Tool != "" {
		what += " " + text.OneLine(h.Tool, 40)
	}
	if h.Subagent != "" {
		what += " [agent-" + text.OneLine(h.Subagent, 40) + "]"
	}
	cwd := text.OneLine(h.Cwd, 200)
	if cwd == "" {
		cwd = "-"
	}
	head := fmt.Sprintf("%s  %s  %s  %s  %s  %s", h.Session, h.Agent, text.OneLine(h.Conversation, 80), when, cwd, what)
	if color {
		head = "\x1b[2m" + head + "\x1b[0m"
	}
	fmt.Fprintf(w, "%s\n    %s\n", head, marked(h.Snippet, h.Marks, color))
}

// marked is the snippet on one line, its marks in bold red when color.
func marked(s string, marks [][2]int, color bool) string {
	var b strings.Builder
	m := 0
	space := false
	for i := 0; i < len(s); i++ {
		if color && m < len(marks) && i == marks[m][0] {
			b.WriteString("\x1b[1;31m")
		}
		switch c := s[i]; c {
		case '\n', '\t', '\r', ' ':
			if !space {
				b.WriteByte(' ')
			}
			space = true
		default:
			b.WriteByte(c)
			space = false
		}
		if m < len(marks) && i+1 == marks[m][1] {
			if color {
				b.WriteString("\x1b[0m")
			}
			m++
		}
	}
	return strings.TrimSpace(b.String())
}

// ParseSince reads --since: a duration back from now (90m, 36h, 7d, 2w) or a date (2026-11-25, RFC 3339).
func ParseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, unit := range []struct {
		suffix string
		d      time.Duration
	}{{"d", 24 * time.Hour}, {"w", 7 * 24 * time.Hour}} {
		if n, ok := strings.CutSuffix(s, unit.suffix); ok {
			if v, err := strconv.ParseFloat(n, 64); err == nil && v >= 0 {
				return now.Add(-time.Duration(v * float64(unit.d))), nil
			}
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q: want a duration back from now (90m, 36h, 7d, 2w) or a date (2026-11-25, 2026-11-25T14:00, RFC 3339)", s)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
