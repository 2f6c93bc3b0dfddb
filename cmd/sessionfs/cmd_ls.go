package main

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"text/template"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	_ "github.com/sessionfs/sessionfs/agents/all" // its index counts conversations
	"github.com/sessionfs/sessionfs/layout"
)

// lsOptions are ls's flags.
type lsOptions struct {
	json, quiet bool
	size        bool
	filters     []string
	sort        string
	format      string
}

// lsRow is one row of ls: the session plus the conversations in it.
type lsRow struct {
	sessionView
	Conversations int            `json:"conversations"` // every agent's
	Agents        map[string]int `json:"agents"`        // conversations by agent, Claude's too (as the page shows them)
}

func (a *app) lsCmd() *cobra.Command {
	var o lsOptions
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List sessions: id, created, last active, size, conversations, labels",
		Long: `ls lists the store's sessions. --filter label=K=V keeps those whose label K is V, --filter label=K those
that have label K (repeat --filter: all must hold). --sort orders by id (the default), created or active (newest
first) or size (largest first). -q prints only ids; --format prints each session through a Go template.

SIZE is the bytes the session's folder holds on disk (as du counts them, its own filesystem only), and LAST
ACTIVE the newest modification time in it. Both are kept in the store's index, measured when ls last saw the
session change (its session.json, a conversation made or removed) or ran with --size, and again when over an
hour old (each ls measures a few); writes within the session's files since are not in them. --size measures
every session now (a walk of each: slow on a large store), as --sort size and --sort active do. All else is
read fresh: the index checks each session's own times and rescans those that changed, whoever changed them
(another host sharing the store too). With the store mounted, ls takes the mount's word for the sessions its
watch saw unchanged (<mount>/.sessionfs-index) and checks only the others.`,
		Example: `  sessionfs ls
  sessionfs ls --filter label=team=web -q
  sessionfs ls --sort active | head
  sessionfs ls --format '{{.ID}} {{.Conversations}}'
  sessionfs ls --json | jq -r '.[] | select(.size > 1e9) | .id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runLs(cmd.OutOrStdout(), o)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	cmd.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "print only session ids")
	cmd.Flags().BoolVarP(&o.size, "size", "s", false, "measure every session's size and last activity now (see SIZE above)")
	cmd.Flags().StringVar(&o.sort, "sort", "id", "order by id, created, active (newest first) or size (largest first)")
	cmd.Flags().StringArrayVar(&o.filters, "filter", nil, "keep sessions with label=K=V, or label=K (repeatable: all must hold)")
	cmd.Flags().StringVar(&o.format, "format", "", formatHelp("{{.ID}} {{.Size}}", "{{.LastActivity}}"))
	return cmd
}

// runLs lists the sessions o keeps, in its order, as it asks: ids, JSON, a --format template or a table.
func (a *app) runLs(w io.Writer, o lsOptions) error {
	keep, order, tmpl, err := o.parse()
	if err != nil {
		return err
	}
	s, err := a.openStore()
	if errors.Is(err, errNoStore) && a.defaultStore() {
		return printLs(w, nil, nil, o, tmpl) // a fresh machine: no session yet
	}
	if err != nil {
		return err
	}
	if o.quiet && len(o.filters) == 0 && o.sort == "id" && !o.size {
		return printIDs(w, s)
	}
	useMountsWatch(s)
	defer indexBar(s)()
	infos, err := s.Listing(o.size || o.sort == "size" || o.sort == "active")
	if err != nil {
		return err
	}
	infos = slices.DeleteFunc(infos, func(in layout.Listed) bool { return !keep(in.Labels) })
	slices.SortStableFunc(infos, func(a, b layout.Listed) int { return order(a.Info, b.Info) })
	return printLs(w, s, infos, o, tmpl)
}

// printIDs prints the ids of store s's sessions, sorted: the sessions folder's names, all ls -q needs.
func printIDs(out io.Writer, s *layout.Store) error {
	ids, err := s.IDs()
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(out, 64<<10)
	for _, id := range ids {
		fmt.Fprintln(w, id)
	}
	return w.Flush()
}

// printLs prints sessions infos of store s as o asks: ids, JSON, a --format template (tmpl) or a table. Output
// is buffered: a table of 10,000 rows is otherwise 70,000 writes.
func printLs(out io.Writer, s *layout.Store, infos []layout.Listed, o lsOptions, tmpl *template.Template) (err error) {
	w := bufio.NewWriterSize(out, 64<<10)
	defer func() {
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
	}()
	switch {
	case o.quiet:
		for _, in := range infos {
			fmt.Fprintln(w, in.ID)
		}
		return nil
	case o.json:
		return printJSON(w, lsRows(s, infos))
	case tmpl != nil:
		for _, r := range lsRows(s, infos) {
			if err := printFormatted(w, tmpl, r); err != nil {
				return err
			}
		}
		return nil
	}
	return printLsTable(w, tableRows(infos))
}

// parse checks o's flags: the sessions to keep, their order, and the --format template (nil for none).
func (o lsOptions) parse() (keep func(labels map[string]string) bool, order func(a, b layout.Info) int, tmpl *template.Template, err error) {
	if keep, err = parseFilters(o.filters); err != nil {
		return nil, nil, nil, err
	}
	order, ok := sessionOrders[o.sort]
	if !ok {
		return nil, nil, nil, usageError(fmt.Sprintf("ls --sort %q: want id, created, active or size", o.sort))
	}
	if n := countTrue(o.json, o.quiet, o.format != ""); n > 1 {
		return nil, nil, nil, usageError("ls: --json, -q and --format exclude each other")
	}
	if o.format != "" {
		if tmpl, err = parseFormat("ls", o.format); err != nil {
			return nil, nil, nil, err
		}
	}
	return keep, order, tmpl, nil
}

// lsRows are the rows of sessions infos, with their conversations by agent (as the index counted them).
func lsRows(s *layout.Store, infos []layout.Listed) []lsRow {
	rows := make([]lsRow, len(infos))
	if len(infos) == 0 {
		return rows // and s may be nil: no store yet
	}
	mnt := mountpoint(s)
	for i, in := range infos {
		rows[i] = lsRow{sessionView: viewOf(s, mnt, &in.Meta, in.Info), Agents: map[string]int{}}
		for name, n := range in.Agents {
			if n > 0 {
				rows[i].Agents[name] = n
				rows[i].Conversations += n
			}
		}
	}
	return rows
}

// tableRows are lsRows with only what the table shows: the paths, runs and mountpoint of each row's view cost
// more than the rest of a 10,000-session ls.
func tableRows(infos []layout.Listed) []lsRow {
	rows := make([]lsRow, len(infos))
	for i, in := range infos {
		r := &rows[i]
		r.ID, r.Labels, r.Size = in.ID, in.Labels, in.Size
		r.Created, r.LastActivity, r.Damaged = nullIfZero(in.Created), nullIfZero(in.LastActivity), nullIfZero(in.Damaged)
		for _, n := range in.Agents {
			r.Conversations += max(n, 0)
		}
	}
	return rows
}

// printLsTable prints rows as ls's table: STATUS says "ok", or why a session is damaged (which show's message
// tells how to repair).
func printLsTable(w io.Writer, rows []lsRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCREATED\tLAST ACTIVE\tSIZE\tCONVERSATIONS\tSTATUS\tLABELS")
	for _, r := range rows {
		created, status := ago(orZero(r.Created)), "ok"
		if r.Damaged != nil {
			created, status = "-", "damaged: "+damageReason(*r.Damaged)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.ID, created, ago(orZero(r.LastActivity)),
			humanize.IBytes(uint64(r.Size)), r.Conversations, status, labelText(r.Labels))
	}
	return tw.Flush()
}

// damageReason is why a session is damaged, short enough for a column: what follows layout's "session metadata
// is damaged" when it says so (show gives the whole message, and the fix).
func damageReason(why string) string {
	if _, after, ok := strings.Cut(why, layout.ErrDamaged.Error()+": "); ok {
		why = after
	}
	return truncate(oneLine(why), 60)
}

// parseFilters reads ls --filter values: label=K=V (label K is V) or label=K (label K is set).
func parseFilters(vals []string) (func(labels map[string]string) bool, error) {
	type cond struct {
		key, value string
		any        bool
	}
	var conds []cond
	for _, f := range vals {
		kind, rest, _ := strings.Cut(f, "=")
		if kind != "label" || rest == "" {
			return nil, usageError(fmt.Sprintf("ls --filter %q: want label=KEY=VALUE or label=KEY", f))
		}
		k, v, hasValue := strings.Cut(rest, "=")
		if err := layout.ValidateLabel(k, v); err != nil { // no session can have it: said, not an empty list
			return nil, usageError(fmt.Sprintf("ls --filter %q: %v", f, err))
		}
		conds = append(conds, cond{key: k, value: v, any: !hasValue})
	}
	return func(labels map[string]string) bool {
		for _, c := range conds {
			v, ok := labels[c.key]
			if !ok || (!c.any && v != c.value) {
				return false
			}
		}
		return true
	}, nil
}

// countTrue counts the true ones of bs.
func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// sessionOrders are ls --sort's orders: times newest first, sizes largest first, ties by id.
var sessionOrders = map[string]func(a, b layout.Info) int{
	"id":      func(a, b layout.Info) int { return strings.Compare(a.ID, b.ID) },
	"created": func(a, b layout.Info) int { return cmp.Or(b.Created.Compare(a.Created), strings.Compare(a.ID, b.ID)) },
	"active": func(a, b layout.Info) int {
		return cmp.Or(b.LastActivity.Compare(a.LastActivity), strings.Compare(a.ID, b.ID))
	},
	"size": func(a, b layout.Info) int { return cmp.Or(cmp.Compare(b.Size, a.Size), strings.Compare(a.ID, b.ID)) },
}

// indexBar shows the index's rescan of s's sessions as a bar on stderr, as the other long commands show their
// progress (only when stderr is a terminal), once it has taken lateBarAfter (sessions copied in, restored, synced
// from another host: each is walked once); a quicker rescan shows nothing. The returned func ends it.
func indexBar(s *layout.Store) (finish func()) {
	return indexBarOn(s, term.IsTerminal(int(os.Stderr.Fd())), newCountBar)
}

// indexBarOn is indexBar with whether to show it (tty) and the bar (newBar) given.
func indexBarOn(s *layout.Store, tty bool, newBar func(desc string) (progress func(done, total int), finish func())) func() {
	if !tty {
		return func() {}
	}
	var end func()
	s.IndexProgress, end = lateBar("indexing sessions", newBar)
	return func() {
		s.IndexProgress = nil
		end()
	}
}
