package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"text/template"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/layout"
)

// shown is what show prints: where the session is on the host and in containers, and its conversations.
type shown struct {
	sessionView
	Container     layout.Paths          `json:"container"`
	Conversations []agents.Conversation `json:"conversations"` // every agent's: Claude's, Codex's, Gemini's, Qwen's
}

func (a *app) showCmd() *cobra.Command {
	var asJSON bool
	var format string
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a session: its paths on the host and in containers, and every agent's conversations",
		Example: `  sessionfs show fix-login
  sessionfs show fix-login --format '{{.Store.Workspace}}'
  sessionfs show fix-login --json | jq -r '.conversations[0].id'`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON && format != "" {
				return usageError("show: --json and --format exclude each other")
			}
			var tmpl *template.Template
			if format != "" {
				var err error
				if tmpl, err = parseFormat("show", format); err != nil {
					return err
				}
			}
			s, m, err := a.session(args[0])
			if err != nil {
				return err
			}
			info := s.Describe(m.ID) // sizes walked beneath the session's fd, on its own filesystem
			out := shown{sessionView: viewOf(s, mountpoint(s), m, info), Container: layout.ContainerPaths}
			sess, err := s.OpenSession(m.ID)
			if err != nil {
				return err
			}
			defer sess.Close()
			if out.Conversations, err = all.SessionConversations(sess); err != nil {
				return err
			}
			if asJSON {
				out.Conversations = orEmpty(out.Conversations)
				return printJSON(cmd.OutOrStdout(), out)
			}
			if tmpl != nil {
				return printFormatted(cmd.OutOrStdout(), tmpl, out)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "Session     %s\nCreated     %s\nLast active %s\nSize        %s\n", m.ID,
				m.Created.Local().Format(time.RFC3339), ago(orZero(out.LastActivity)), humanize.IBytes(uint64(out.Size)))
			if m.ForkedFrom != "" {
				fmt.Fprintf(w, "Forked from %s\n", m.ForkedFrom)
			}
			if len(m.Labels) > 0 {
				fmt.Fprintf(w, "Labels      %s\n", labelText(m.Labels))
			}
			fmt.Fprintf(w, "Store       %s\n", out.Store.Root)
			if out.Mounted != nil {
				fmt.Fprintf(w, "Mounted     %s\n", out.Mounted.Root)
			}
			fmt.Fprintf(w, "Container   %s (workspace %s, CLAUDE_CONFIG_DIR=%s)\n", out.Container.Root,
				out.Container.Workspace, out.Container.Claude)
			if len(m.Aliases) > 0 {
				fmt.Fprintf(w, "Aliases     %s\n", strings.Join(m.Aliases, ", "))
			}
			if len(m.Runs) > 0 {
				r := m.Runs[len(m.Runs)-1]
				end := fmt.Sprintf("exit %d", r.ExitCode)
				if r.End.IsZero() {
					end = "unfinished"
					if runningNow(s, m.ID) {
						end = "running"
					}
				}
				fmt.Fprintf(w, "Runs        %d, the last %s on %s, %s (sessionfs runs)\n", len(m.Runs), ago(r.Start), r.Backend, end)
			}
			fmt.Fprintf(w, "\nConversations (%d)\n", len(out.Conversations))
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			for _, c := range out.Conversations {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%d messages\t%d subagents\t%q\n", c.Agent, c.ID, ago(c.Last), c.Messages,
					c.Subagents, truncate(c.FirstPrompt, 60))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&format, "format", "", formatHelp("{{.Store.Workspace}}", "{{.LastActivity}}"))
	return cmd
}

func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return humanize.Time(t)
}

func truncate(s string, n int) string {
	r := []rune(oneLine(s))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n-1]) + "…"
}
