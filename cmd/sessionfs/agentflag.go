package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/agents/claude"
)

const agentHelp = "the coding agent the command runs (claude, codex, gemini, qwen, opencode, pi, kimi, copilot): its variables point it at its folder in the session"

// agentFlag adds --agent to cmd, with help if given.
func agentFlag(cmd *cobra.Command, name *string, help ...string) {
	h := agentHelp
	if len(help) > 0 {
		h = help[0]
	}
	cmd.Flags().StringVar(name, "agent", claude.Agent.Name, h)
	_ = cmd.RegisterFlagCompletionFunc("agent", fixedValues(all.Names()...))
}

// checkAgent refuses an unknown --agent as a usage mistake.
func checkAgent(name string) (*agents.Agent, error) {
	if name == "" {
		return nil, usageError("--agent: empty (want " + strings.Join(all.Names(), ", ") + ")")
	}
	a, err := all.ByName(name)
	if err != nil {
		return nil, usageError("--agent: " + strings.TrimPrefix(err.Error(), "unknown agent "))
	}
	return a, nil
}
