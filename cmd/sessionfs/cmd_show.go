package main

import (
	"fmt"
	"io"
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

// sessionDetail is what show prints: where the session is on the host and in containers, and its conversations.
type sessionDetail struct {
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
			return a.runShow(cmd.OutOrStdout(), args[0], asJSON, format)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&format, "format", "", formatHelp("{{.Store.Workspace}}", "{{.LastActivity}}"))
	return cmd
}

// runShow prints session arg: as JSON, through a --format template, or for a person to read.
func (a *app) runShow(w io.Writer, arg string, asJSON bool, format string) error {
	var tmpl *template.Template
	if format != "" {
		var err error
		if tmpl, err = parseFormat("show", format); err != nil {
			return err
		}
	}
	s, m, err := a.session(arg)
	if err != nil {
		return err
	}
	out, err := detailOf(s, m)
	if err != nil {
		return err
	}
	if asJSON {
		out.Conversations = orEmpty(out.Conversations)
		return printJSON(w, out)
	}
	if tmpl != nil {
		return printFormatted(w, tmpl, out)
	}
	return printDetail(w, s, m, out)
}

// detailOf is session m as show sees it: its sizes walked beneath its fd, on its own filesystem, and every agent's
// conversations.
func detailOf(s *layout.Store, m *layout.Meta) (sessionDetail, error) {
	out := sessionDetail{sessionView: viewOf(s, mountpoint(s), m, s.Describe(m.ID)), Container: layout.ContainerPaths}
	sess, err := s.OpenSession(m.ID)
	if err != nil {
		return out, err
	}
	defer sess.Close()
	out.Conversations, err = all.SessionConversations(sess)
	return out, err
}

// printDetail prints session m (out: its detail) for a person to read.
func printDetail(w io.Writer, s *layout.Store, m *layout.Meta, out sessionDetail) error {
	fmt.Fprintf(w, "Session     %s\nCreated     %s\nLast active %s\nSize        %s\n", m.ID,
		m.Created.Local().Format(time.RFC3339), ago(orZero(out.LastActivity)), humanize.IBytes(uint64(out.Size)))
	if m.ForkedFrom != "" {
		fmt.Fprintf(w, "Forked from %s\n", oneLine(m.ForkedFrom))
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
		fmt.Fprintf(w, "Aliases     %s\n", oneLine(strings.Join(m.Aliases, ", ")))
	}
	if len(m.Runs) > 0 {
		r := m.Runs[len(m.Runs)-1]
		end := fmt.Sprintf("exit %d", r.ExitCode)
		if r.End.IsZero() {
			end = "unfinished"
			if s.Running(m.ID) {
				end = "running"
			}
		}
		fmt.Fprintf(w, "Runs        %d, the last %s on %s, %s (sessionfs runs)\n", len(m.Runs), ago(r.Start), oneLine(r.Backend), end)
	}
	fmt.Fprintf(w, "\nConversations (%d)\n", len(out.Conversations))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range out.Conversations {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d messages\t%d subagents\t%q\n", c.Agent, c.ID, ago(c.Last), c.Messages,
			c.Subagents, truncate(c.FirstPrompt, 60))
	}
	return tw.Flush()
}
