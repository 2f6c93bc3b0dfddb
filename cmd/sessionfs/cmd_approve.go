package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sessionfs/sessionfs/agents/text"
	"github.com/sessionfs/sessionfs/trust"
)

// approveOptions are approve's flags.
type approveOptions struct {
	workdir string
	yes     bool
	show    bool
	revoke  bool
}

func (a *app) approveCmd() *cobra.Command {
	var o approveOptions
	cmd := &cobra.Command{
		Use:   "approve ID [-w DIR] [--yes | --show | --revoke]",
		Short: "Look at what a session's agent configuration would run on this host, and approve it",
		Long: `A session's agent configuration is code: Claude's hooks, apiKeyHelper, statusLine, env and MCP servers, Codex's
notify, Gemini's and Qwen's .env and extensions, opencode's plugins, in the session's folders and its workspace.
A session's processes write them (its agent in a container, an import), so exec, resume, env and run --backend
local refuse to start an agent on this host while any of it is new or changed since you approved it, naming what.

approve prints each piece as the agent would act on it (a theme or a model is left out: it runs nothing), asks,
and records its sha256 in your own folder (~/.config/sessionfs/approved of your home as the user database names
it, never a variable a session's shell may have set; $SESSIONFS_APPROVALS to choose), as direnv allow does: a
later change needs a new approval. What is recorded is what was shown, read once. A link, a FIFO or a folder of more
than 4,096 files or 64 MiB cannot be approved: run the agent sandboxed instead (exec --landlock, run --backend
docker), where the session's code runs with the session's rights, not yours.

A project's own settings (a .claude/settings.json, .mcp.json, .env, ...) count in every folder of the session: a
shell may cd into any. -w names the run's folder as exec's -w does, for a run that starts outside the workspace.`,
		Example: `  sessionfs approve fix-login
  sessionfs approve fix-login --show
  sessionfs approve fix-login -w api --yes
  sessionfs approve fix-login --revoke`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.yes && (o.show || o.revoke) || o.show && o.revoke {
				return usageError("approve: --yes, --show and --revoke are each a different action: give one")
			}
			return a.runApprove(cmd.OutOrStdout(), os.Stdin, args[0], o)
		},
	}
	cmd.Flags().StringVarP(&o.workdir, "workdir", "w", "", "the run's folder, as exec -w names it (default: the workspace)")
	cmd.Flags().BoolVarP(&o.yes, "yes", "y", false, "approve without asking (what is shown is what is approved)")
	cmd.Flags().BoolVar(&o.show, "show", false, "print what would be approved, and approve nothing")
	cmd.Flags().BoolVar(&o.revoke, "revoke", false, "remove the session's approval")
	return cmd
}

// maxShownLines bounds each piece as approve prints it; the rest is named, with the file to read it in.
const maxShownLines = 400

// runApprove shows session arg's code for a run in o.workdir and records the user's approval of it.
func (a *app) runApprove(w io.Writer, in *os.File, arg string, o approveOptions) error {
	wd, err := sessionWorkdir(o.workdir)
	if err != nil {
		return err
	}
	s, m, err := a.session(arg)
	if err != nil {
		return err
	}
	approvals, err := trust.UserApprovals()
	if err != nil {
		return err
	}
	if o.revoke {
		if err := approvals.Revoke(s.Root, m.ID); err != nil {
			return err
		}
		fmt.Fprintf(w, "session %s: approval removed\n", m.ID)
		return nil
	}
	c, err := trust.ReadSession(s, m.ID, wd)
	if err != nil {
		return err
	}
	if len(c.Pieces) == 0 {
		fmt.Fprintf(w, "session %s holds no agent configuration that runs commands: nothing to approve\n", m.ID)
		return nil
	}
	r, err := approvals.Get(s.Root, m.ID)
	if err != nil {
		return err
	}
	changes := trust.Unapproved(c, r)
	showCode(w, s.Dir(m.ID), c, changes)
	cannot := 0
	for _, ch := range changes {
		if ch.Problem != "" {
			cannot++
		}
	}
	switch {
	case o.show:
		return nil
	case cannot > 0:
		return fmt.Errorf("session %s: %d piece(s) cannot be approved (see above): run the agent sandboxed (sessionfs exec --landlock %s -- CMD, or run --backend docker), or remove them", m.ID, cannot, m.ID)
	case len(changes) == 0:
		fmt.Fprintf(w, "session %s: all of it is approved already\n", m.ID)
		return nil
	case !o.yes && !term.IsTerminal(int(in.Fd())):
		return usageError("approve: stdin is not a terminal to ask on: give --yes to approve what is shown above")
	case !o.yes && !ask(w, in, fmt.Sprintf("Run this on this host as you, whenever an agent starts in session %s? [y/N] ", m.ID)):
		return fmt.Errorf("session %s: not approved", m.ID)
	}
	if err := approvals.Approve(s.Root, m.ID, c); err != nil {
		return err
	}
	fmt.Fprintf(w, "session %s: approved (%d piece(s)); a change to any of it needs a new approval\n", m.ID, len(c.Pieces))
	return nil
}

// showCode prints each piece of c, safe for a terminal, marked new, changed or approved.
func showCode(w io.Writer, dir string, c trust.Code, changes []trust.Change) {
	how := map[string]string{}
	for _, ch := range changes {
		how[ch.Path] = ch.How
	}
	for _, p := range c.Pieces {
		state := how[p.Path]
		if state == "" {
			state = "approved"
		}
		fmt.Fprintf(w, "== %s (%s): %s\n", text.OneLine(p.Path, 512), p.Agent, state)
		if p.Problem != "" {
			continue
		}
		lines := strings.Split(strings.TrimRight(text.Safe(string(p.Content), 0), "\n"), "\n")
		for i, l := range lines {
			if i == maxShownLines {
				fmt.Fprintf(w, "   ... %d more lines: read them in %s\n", len(lines)-i, text.OneLine(dir+"/"+p.Path, 1024))
				break
			}
			fmt.Fprintf(w, "   %s\n", l)
		}
	}
}

// ask prints question and reads a yes from in.
func ask(w io.Writer, in io.Reader, question string) bool {
	fmt.Fprint(w, question)
	line, _ := bufio.NewReader(in).ReadString('\n')
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes"
}
