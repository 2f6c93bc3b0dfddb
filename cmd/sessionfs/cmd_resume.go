package main

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/backends"
	"github.com/sessionfs/sessionfs/layout"
)

func (a *app) resumeCmd() *cobra.Command {
	var claudeBin string
	cmd := &cobra.Command{
		Use:   "resume UUID|ID [-- CLAUDE-ARGS...]",
		Short: "Resume a conversation (by its uuid) or a session's newest one (by the session id)",
		Long: `resume runs claude in the right session with the right environment: "claude --resume UUID" in the session
that holds conversation UUID, or "claude --continue" in session ID. It runs in the session's workspace,
through the mount when the store is mounted. A conversation of another agent is resumed with that agent, from
PATH, with its variables set as exec --agent sets them: "codex resume UUID", "gemini --resume UUID",
"qwen --resume UUID", "opencode --session ID" (its conversations moved to the workspace first).`,
		Example: `  sessionfs resume 2fe2d21b-be8f-4b12-b46b-12e68f6e9f01
  sessionfs resume fix-login -- -p "carry on"`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: a.completeResume,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash > 1 || (dash == -1 && len(args) > 1) {
				return usageError("resume: want UUID|ID [-- CLAUDE-ARGS...]")
			}
			return a.runResume(claudeBin, args[0], args[1:])
		},
	}
	cmd.Flags().StringVar(&claudeBin, "claude", "claude", "the claude command")
	a.waitFlag(cmd)
	return cmd
}

// runResume resumes target, a conversation (the start of one's id) or a session, passing extra to the agent.
func (a *app) runResume(claudeBin, target string, extra []string) error {
	s, err := a.openStore()
	if err != nil {
		return err
	}
	if target, err = expandResumeTarget(s, target); err != nil {
		return err
	}
	// A conversation first: an imported session is named after its conversation's uuid, and "resume UUID" must
	// resume that conversation, not the session's newest one.
	holders, err := claude.Holders(s, target)
	if err != nil && !errors.Is(err, claude.ErrNoConversation) {
		return err
	}
	if len(holders) > 0 {
		if err := needCLI(claudeBin); err != nil {
			return err
		}
		holders, _ = conversationHolders(s, target) // names the other holders, if any
		return a.execIn(holders[0].ID, append([]string{claudeBin, "--resume", target}, extra...))
	}
	if others, err := all.Holders(s, target); err == nil && len(others) > 0 {
		return a.resumeAgent(s, target, extra)
	}
	return a.continueSession(claudeBin, target, extra)
}

// expandResumeTarget is target, or when it is neither a session's id nor a whole conversation's, the conversation
// whose id it starts (watch prints 8 characters).
func expandResumeTarget(s *layout.Store, target string) (string, error) {
	if s.Exists(target) {
		return target, nil
	}
	if h, _ := claude.Holders(s, target); len(h) > 0 {
		return target, nil
	}
	if o, _ := all.Holders(s, target); len(o) > 0 {
		return target, nil
	}
	return expandConversation(s, target)
}

// resumeAgent resumes conversation uuid of an agent other than Claude, with that agent, in the session that owns
// it.
func (a *app) resumeAgent(s *layout.Store, uuid string, extra []string) error {
	holders, name, _ := anyHolders(s, uuid) // names the other holders, if any
	ag, _ := all.ByName(name)
	argv := append(ag.Resume(uuid), extra...)
	if err := needCLI(argv[0]); err != nil {
		return err
	}
	return a.execIn(holders[0].ID, argv, func(sp *backends.Spec) { sp.Agent = ag.Name })
}

// continueSession resumes the newest Claude conversation of session arg.
func (a *app) continueSession(claudeBin, arg string, extra []string) error {
	id, err := a.resolveID(arg)
	if errors.Is(err, layout.ErrNotFound) || errors.Is(err, layout.ErrInvalidID) {
		return fmt.Errorf("no session or conversation is called %q (sessionfs ls; sessionfs find UUID)", arg)
	} else if err != nil {
		return err
	}
	if err := needCLI(claudeBin); err != nil {
		return err
	}
	return a.execIn(id, append([]string{claudeBin, "--continue"}, extra...))
}

// npmPackages are the agents' CLIs as npm installs them, for the hint when one is missing.
var npmPackages = map[string]string{
	"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex", "gemini": "@google/gemini-cli", "qwen": "@qwen-code/qwen-code", "opencode": "opencode-ai",
}

// needCLI checks that the agent's command bin can be run, before anything is recorded: a missing one is exit
// 127 (not found, as a shell says) with the way to install it.
func needCLI(bin string) error {
	if _, err := exec.LookPath(bin); err == nil {
		return nil
	}
	hint := "sessionfs doctor checks it"
	if pkg, ok := npmPackages[filepath.Base(bin)]; ok {
		hint = "install it with: npm install -g " + pkg + " (sessionfs doctor checks it)"
	}
	return codedError{127, fmt.Errorf("%s is not on PATH: %s", bin, hint)}
}
