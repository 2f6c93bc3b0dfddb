package main

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// listed is one row of ls: the store's view plus the conversations in the session.
type listed struct {
	layout.Info
	Conversations int            `json:"conversations"`    // every agent's
	Agents        map[string]int `json:"agents,omitempty"` // conversations by agent, when an agent other than Claude has some
}

func (a *app) lsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List sessions: id, created, last active, size, conversations, labels",
		Example: `  sessionfs ls
  sessionfs ls --json | jq -r '.[] | select(.size > 1e9) | .id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := a.openStore()
			if err != nil {
				return err
			}
			infos, err := s.List()
			if err != nil {
				return err
			}
			rows := make([]listed, len(infos))
			for i, in := range infos {
				rows[i] = listed{Info: in}
				if sess, err := s.OpenSession(in.ID); err == nil {
					by := agents.CountConversations(sess)
					sess.Close()
					for _, n := range by {
						rows[i].Conversations += n
					}
					if len(by) > 1 || (len(by) == 1 && by[agents.Claude.Name] == 0) {
						rows[i].Agents = by
					}
				}
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), rows)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tCREATED\tLAST ACTIVE\tSIZE\tCONVERSATIONS\tLABELS")
			for _, r := range rows {
				if r.Damaged != "" {
					fmt.Fprintf(tw, "%s\t-\t%s\t%s\t%d\tDAMAGED: %s\n", r.ID, ago(r.LastActivity),
						humanize.IBytes(uint64(r.Size)), r.Conversations, oneLine(r.Damaged))
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", r.ID, ago(r.Created), ago(r.LastActivity),
					humanize.IBytes(uint64(r.Size)), r.Conversations, labelText(r.Labels))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func labelText(m map[string]string) string {
	kvs := make([]string, 0, len(m))
	for k, v := range m {
		kvs = append(kvs, k+"="+v)
	}
	sort.Strings(kvs)
	return strings.Join(kvs, ",")
}
