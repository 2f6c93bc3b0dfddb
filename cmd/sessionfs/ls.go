package main

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"text/template"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/layout"
)

// listed is one row of ls: the session plus the conversations in it.
type listed struct {
	sessionView
	Conversations int            `json:"conversations"` // every agent's
	Agents        map[string]int `json:"agents"`        // conversations by agent ({} when only Claude's)
}

func (a *app) lsCmd() *cobra.Command {
	var asJSON, quiet bool
	var filters []string
	var sortBy string
	var format string
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List sessions: id, created, last active, size, conversations, labels",
		Long: `ls lists the store's sessions. --filter label=K=V keeps those whose label K is V, --filter label=K those
that have label K (repeat --filter: all must hold). --sort orders by id (the default), created or active (newest
first) or size (largest first). -q prints only ids; --format prints each session through a Go template.`,
		Example: `  sessionfs ls
  sessionfs ls --filter label=team=web -q
  sessionfs ls --sort active | head
  sessionfs ls --format '{{.ID}} {{.Conversations}}'
  sessionfs ls --json | jq -r '.[] | select(.size > 1e9) | .id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			keep, err := parseFilters(filters)
			if err != nil {
				return err
			}
			order, ok := sessionOrders[sortBy]
			if !ok {
				return usageError(fmt.Sprintf("ls --sort %q: want id, created, active or size", sortBy))
			}
			if n := countTrue(asJSON, quiet, format != ""); n > 1 {
				return usageError("ls: --json, -q and --format exclude each other")
			}
			var tmpl *template.Template
			if format != "" {
				if tmpl, err = parseFormat("ls", format); err != nil {
					return err
				}
			}
			s, err := a.openStore()
			if err != nil {
				return err
			}
			infos, err := s.List()
			if err != nil {
				return err
			}
			infos = slices.DeleteFunc(infos, func(in layout.Info) bool { return !keep(in.Labels) })
			slices.SortStableFunc(infos, order)
			if quiet {
				for _, in := range infos {
					fmt.Fprintln(cmd.OutOrStdout(), in.ID)
				}
				return nil
			}
			rows := make([]listed, len(infos))
			mnt := mountpoint(s)
			for i, in := range infos {
				rows[i] = listed{sessionView: viewOf(s, mnt, &in.Meta, in), Agents: map[string]int{}}
				if sess, err := s.OpenSession(in.ID); err == nil {
					by := all.CountConversations(sess)
					sess.Close()
					for _, n := range by {
						rows[i].Conversations += n
					}
					if len(by) > 1 || (len(by) == 1 && by[claude.Agent.Name] == 0) {
						rows[i].Agents = by
					}
				}
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), rows)
			}
			if tmpl != nil {
				for _, r := range rows {
					if err := printFormatted(cmd.OutOrStdout(), tmpl, r); err != nil {
						return err
					}
				}
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tCREATED\tLAST ACTIVE\tSIZE\tCONVERSATIONS\tLABELS")
			for _, r := range rows {
				if r.Damaged != nil {
					fmt.Fprintf(tw, "%s\t-\t%s\t%s\t%d\tDAMAGED: %s\n", r.ID, ago(orZero(r.LastActivity)),
						humanize.IBytes(uint64(r.Size)), r.Conversations, oneLine(*r.Damaged))
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", r.ID, ago(orZero(r.Created)), ago(orZero(r.LastActivity)),
					humanize.IBytes(uint64(r.Size)), r.Conversations, labelText(r.Labels))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only session ids")
	cmd.Flags().StringVar(&sortBy, "sort", "id", "order by id, created, active (newest first) or size (largest first)")
	cmd.Flags().StringArrayVar(&filters, "filter", nil, "keep sessions with label=K=V, or label=K (repeatable: all must hold)")
	cmd.Flags().StringVar(&format, "format", "", formatHelp("{{.ID}} {{.Size}}", "{{.LastActivity}}"))
	return cmd
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

func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

func labelText(m map[string]string) string {
	kvs := make([]string, 0, len(m))
	for k, v := range m {
		kvs = append(kvs, k+"="+v)
	}
	sort.Strings(kvs)
	return strings.Join(kvs, ",")
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
