package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/agents/follow"
	"github.com/sessionfs/sessionfs/agents/text"
	"github.com/sessionfs/sessionfs/layout"
)

// watchOptions are watch's flags.
type watchOptions struct {
	asJSON, fromStart, noFollow bool
}

func (a *app) watchCmd() *cobra.Command {
	var o watchOptions
	cmd := &cobra.Command{
		Use:   "watch ID",
		Short: "Follow a session's conversations live, one line per message",
		Long: `watch follows every transcript of the session (subagents' too) and prints each new message as one line:
the conversation's short id (the first 8 characters of its uuid), time, role, then the text or the tool call;
subagent messages are marked [agent-...]. The other agents' conversations in the session (Codex, Gemini CLI,
Qwen Code, opencode, pi, Kimi Code, Copilot CLI) are followed too, marked [codex], [gemini], [qwen], [opencode],
[pi], [kimi], [copilot]. --json prints the raw entries, one per line, for tools. It starts at the current end of the transcripts, like tail -f; --from-start
prints what they hold first, every conversation and agent of the session interleaved by time (to read the
session: --from-start --no-follow). A message of today shows its time; an older one its date too.

opencode keeps its messages as rows of its database: watch reads a private copy of it when it changes (at most
a few times a second) and prints a message once it is complete, a reply when opencode marks it completed (its
text and tool calls then final), a prompt once its text is in. Its short id is the 8 characters after "ses_",
which find and resume take; a subagent's messages are marked [agent-<its short id>]. With --json each message
is one object as opencode's API gives it: {"info": the message, "parts": [its parts]}.`,
		Example: `  sessionfs watch fix-login
  sessionfs watch fix-login --from-start --no-follow | less   # read the session's conversations so far
  sessionfs watch fix-login --json | jq -r .type`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runWatch(cmd.OutOrStdout(), args[0], o)
		},
	}
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print each new transcript entry as JSON")
	cmd.Flags().BoolVar(&o.fromStart, "from-start", false, "print what the transcripts already hold first")
	cmd.Flags().BoolVar(&o.noFollow, "no-follow", false, "print what the transcripts hold and exit (implies --from-start)")
	return cmd
}

// runWatch prints session arg's conversations to w as they grow, until SIGINT or SIGTERM (with noFollow: what they
// hold, then done).
func (a *app) runWatch(w io.Writer, arg string, o watchOptions) error {
	s, m, err := a.session(arg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.noFollow {
		o.fromStart = true
		stop() // printed, then done
	}
	sess, err := s.OpenSession(m.ID)
	if err != nil {
		return err
	}
	defer sess.Close()
	// All of projects/: used without the mount, Claude files transcripts under other folder names.
	p := layout.Derive(s.Dir(m.ID))
	warn := func(msg string) { warnf("watch: %s", oneLine(msg)) }
	opts := follow.Options{JSON: o.asJSON, FromStart: o.fromStart, Warn: warn}
	// What the agents wrote reaches the terminal as text: their escape sequences shown, never sent.
	return follow.New(sess, p.Root, p.Projects, text.NewSafeWriter(w), opts).Run(ctx)
}
