package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/session"
)

func (a *app) envCmd() *cobra.Command {
	var container bool
	var agent string
	cmd := &cobra.Command{
		Use:   "env ID [--agent AGENT]",
		Short: "Print export lines that point a shell at a session (for eval)",
		Long: `env prints export lines for eval: SESSION_DIR, and the variables that point Claude Code at the session's
.claude. With --agent codex|gemini|qwen|opencode|pi|kimi|copilot, also that agent's (CODEX_HOME, GEMINI_CLI_HOME,
QWEN_HOME, opencode's XDG_DATA_HOME, XDG_CONFIG_HOME, XDG_STATE_HOME and OPENCODE_DB, PI_CODING_AGENT_DIR, KIMI_CODE_HOME,
COPILOT_HOME), whose folder is made in the session if it has none yet. opencode's and Kimi's conversations are moved
to the session's workspace, the cwd they continue them from.
An agent's marks on the processes it starts (CLAUDECODE, CLAUDE_CODE_CHILD_SESSION, CODEX_SANDBOX, ...), when
this shell has them, are unset first: the agent started from it is a session of its own.`,
		Example: `  eval "$(sessionfs env fix-login)" && cd "$SESSION_DIR/workspace" && claude
  eval "$(sessionfs env fix-login --agent codex)" && codex
  sessionfs env fix-login --container   # the paths a container sees`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runEnv(cmd.OutOrStdout(), args[0], agent, container)
		},
	}
	cmd.Flags().BoolVar(&container, "container", false, "print the paths as containers and sandboxes see them")
	agentFlag(cmd, &agent)
	return cmd
}

// runEnv prints the export lines of session arg for agent (made ready in the session first), with the paths as
// a container sees them when container.
func (a *app) runEnv(w io.Writer, arg, agent string, container bool) error {
	ag, err := checkAgent(agent)
	if err != nil {
		return err
	}
	s, m, err := a.session(arg)
	if err != nil {
		return err
	}
	root, _ := sessionDir(s, m.ID)
	if container {
		root = layout.ContainerRoot
	} else if err := session.ApprovedOnHost(s, m.ID, mountpoint(s), "", ag); err != nil {
		return err
	}
	warnings, err := session.PrepareAgent(s, m.ID, ag, mountpoint(s))
	warnEach(warnings)
	if err != nil {
		return err
	}
	vars := agents.SessionEnv(nil, m.ID, root, ag)
	warnEach(session.LaunchAgent(s, m.ID, ag, root, ""))
	// An agent's marks on its children, in this shell (one of Claude Code's): the agent started from it would
	// run as a nested session of another.
	var inherited []string
	for _, k := range all.ChildVars() {
		if _, ok := os.LookupEnv(k); ok && !container {
			inherited = append(inherited, k)
		}
	}
	if len(inherited) > 0 {
		fmt.Fprintf(w, "unset %s\n", strings.Join(inherited, " "))
	}
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(w, "export %s=%s\n", k, shellQuote(v))
	}
	return nil
}
