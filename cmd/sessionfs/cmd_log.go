package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/agents/text"
	"github.com/sessionfs/sessionfs/layout"
)

// logOptions are log's flags.
type logOptions struct {
	agent string
	text.LogOptions
}

func (a *app) logCmd() *cobra.Command {
	var o logOptions
	cmd := &cobra.Command{
		Use:   "log UUID|ID [CONVERSATION]",
		Short: "Print a conversation (what was said, each tool call one line) as Markdown; not logs, a run's output",
		Long: `log prints one conversation of a coding agent as readable Markdown: a header (agent, session, cwds, times),
then the prompts and replies as text, each tool call on one line with its arguments shortened and its result
summarized, a subagent's conversation quoted where it was started. Every agent's conversations read: Claude,
Codex, Gemini CLI, Qwen Code, opencode, pi, Kimi Code, Copilot CLI. What a session wrote reaches your terminal with its control characters
shown as \xNN, never sent.

UUID is a conversation's id as show lists it (or its start, 8 characters as watch prints); ID a session, for its
latest conversation, or with CONVERSATION, that one of it. --follow goes on printing what the agent adds, as
docker logs -f does; --json prints the entries (kind, time, cwd, text, tool, subagent, offset), one a line.

Not to be confused with "sessionfs logs RUN", which prints what a run of exec, run or resume printed (stdout
and stderr). A conversation or session that is not found exits with status 125, as every sessionfs command
does for a session it cannot find.`,
		Example: `  sessionfs log fix-login                     # its latest conversation
  sessionfs log 4f1c2a9e                      # a conversation of any session, by the start of its id
  sessionfs log fix-login ses_7a1b --agent opencode
  sessionfs log -f fix-login                  # and what the agent adds, until Ctrl-C
  sessionfs log fix-login --json | jq -r 'select(.kind=="tool_call").text'`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: a.completeConversation,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return a.runLog(ctx, cmd.OutOrStdout(), args, o)
		},
	}
	cmd.Flags().BoolVarP(&o.Follow, "follow", "f", false, "go on printing what the agent adds")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the entries as JSON, one a line")
	cmd.Flags().StringVar(&o.agent, "agent", "", "only this agent's conversations (claude, codex, gemini, qwen, opencode, pi, kimi, copilot)")
	_ = cmd.RegisterFlagCompletionFunc("agent", fixedValues(all.Names()...))
	return cmd
}

// runLog prints the conversation args name: a conversation anywhere, a session's latest, or one of a session.
func (a *app) runLog(ctx context.Context, w io.Writer, args []string, o logOptions) error {
	among := all.Agents
	if o.agent != "" {
		ag, err := checkAgent(o.agent)
		if err != nil {
			return err
		}
		among = []*agents.Agent{ag}
	}
	s, err := a.openStore()
	if err != nil {
		return err
	}
	session, conv := args[0], ""
	var convErr error // why args[0] is no conversation, when it is no session either
	if len(args) == 2 {
		conv = args[1]
	} else if !s.Exists(session) {
		// A conversation's id (or its start) in any session, else the start of a session's id.
		full, holders, _, err := findIndexed(s, session)
		if err == nil {
			session, conv = holders[0].ID, full
		}
		convErr = err
	}
	_, m, err := a.session(session)
	if errors.Is(err, layout.ErrNotFound) || errors.Is(err, layout.ErrInvalidID) {
		if convErr != nil && !errors.Is(convErr, claude.ErrNoConversation) {
			return convErr // the start of several conversations
		}
		if len(args) == 1 {
			err = errors.New(args[0] + ": no such conversation or session" + a.suggestion(args[0]) + " (sessionfs ls lists the sessions, sessionfs show SESSION a session's conversations)")
		}
		return err
	}
	if err != nil {
		return err
	}
	sess, err := s.OpenSession(m.ID)
	if err != nil {
		return err
	}
	defer sess.Close()
	ag, c, err := text.Pick(sess, among, conv)
	if err != nil {
		return err
	}
	return text.Log(ctx, w, sess, ag, c, o.LogOptions)
}
