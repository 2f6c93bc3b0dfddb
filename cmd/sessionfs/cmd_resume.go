//go:build !nobackends

package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/backends"
	"github.com/sessionfs/sessionfs/layout"
)

func (a *app) resumeCmd() *cobra.Command {
	var claudeBin string
	var o runOptions
	cmd := &cobra.Command{
		Use:   "resume UUID|ID|ID UUID [--backend docker [--image IMG]] [-- CLAUDE-ARGS...]",
		Short: backendCommands["resume"],
		Long: `resume runs claude in the right session with the right environment: "claude --resume UUID" in the session
that holds conversation UUID, or "claude --continue" in session ID. It runs in the session's workspace,
through the mount when the store is mounted. A conversation of another agent is resumed with that agent, from
PATH, with its variables set as exec --agent sets them: "codex resume UUID", "gemini --resume UUID",
"qwen --resume UUID", "opencode --session ID" and "kimi --session ID" (their conversations moved to the
workspace first), "pi --session ID", "copilot --resume ID".

A conversation in more than one session (a fork's, an import's with --as) is resumed in the session whose copy
was made first; "resume ID UUID" names the session, as the hints printed after a run do.

--backend docker resumes it in a container, as "sessionfs run --backend docker -i" runs (-t when stdin is a
terminal), with --image or config.toml's image (see "sessionfs run --help"); --image alone means docker. The
agent's command is then the image's (--claude names it there); -e, --env-file, --network, -u and -v are run's:
the container runs as the session's owner unless -u or config.toml says otherwise.`,
		Example: `  sessionfs resume 2fe2d21b-be8f-4b12-b46b-12e68f6e9f01
  sessionfs resume fix-login -- -p "carry on"
  sessionfs resume 2fe2d21b --backend docker --image sessionfs-agent`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: a.completeResume,
		RunE: func(cmd *cobra.Command, args []string) error {
			named := cmd.ArgsLenAtDash()
			if named == -1 {
				named = len(args)
			}
			if named > 2 {
				return usageError("resume: want UUID|ID|ID UUID [-- CLAUDE-ARGS...]")
			}
			if cmd.Flags().Changed("image") && !cmd.Flags().Changed("backend") {
				o.backend = "docker"
			}
			if o.backend != "local" && o.backend != "docker" {
				if !slices.Contains(runBackends, o.backend) {
					return unknownBackend(o.backend)
				}
				return usageError(fmt.Sprintf("resume: --backend %s gives the agent no terminal (want local or docker; sessionfs run --backend %s ID claude -p ... runs it there)", o.backend, o.backend))
			}
			if err := checkBackendFlags(cmd, o.backend); err != nil {
				return err
			}
			o.interactive, o.tty = true, term.IsTerminal(int(os.Stdin.Fd()))
			if named == 2 {
				return resumer{a, &o}.resumeHeld(claudeBin, args[0], args[1], args[2:])
			}
			return resumer{a, &o}.runResume(claudeBin, args[0], args[1:])
		},
	}
	cmd.Flags().StringVar(&claudeBin, "claude", "claude", "the claude command")
	cmd.Flags().StringVar(&o.backend, "backend", "local", "where to resume: local or docker")
	cmd.Flags().StringVar(&o.docker.Image, "image", "", "the container image (docker; alone it means --backend docker; default: config.toml's)")
	envFlags(cmd, &o.env, &o.envFiles)
	cmd.Flags().StringVar(&o.docker.Network, "network", "", "the container's network (docker run --network)")
	cmd.Flags().StringVarP(&o.docker.User, "user", "u", "", userHelp)
	cmd.Flags().StringArrayVarP(&o.docker.Volumes, "volume", "v", nil, "an extra bind SRC:DST[:ro], as docker run -v takes it (repeatable; docker)")
	_ = cmd.RegisterFlagCompletionFunc("backend", fixedValues("local", "docker"))
	a.waitFlag(cmd)
	return cmd
}

// resumer resumes a conversation with o's backend (local or docker).
type resumer struct {
	*app
	o *runOptions
}

// runResume resumes target, a conversation (the start of one's id) or a session, passing extra to the agent.
func (a resumer) runResume(claudeBin, target string, extra []string) error {
	s, err := a.openStore()
	if err != nil {
		return err
	}
	// A conversation first: an imported session is named after its conversation's uuid, and "resume UUID" must
	// resume that conversation, not the session's newest one. The store's index says which sessions to look in.
	uuid, holders, agent, err := resumedConversation(s, target)
	if errors.Is(err, claude.ErrNoConversation) {
		return a.continueSession(claudeBin, target, extra)
	} else if err != nil {
		return err
	}
	return a.resumeConversation(claudeBin, holders[0].ID, uuid, agent, extra)
}

// resumeHeld resumes conversation arg (or the start of its id) in session id, which must hold it: a
// conversation in more than one session is carried on in the one named.
func (a resumer) resumeHeld(claudeBin, id, arg string, extra []string) error {
	id, err := a.resolveID(id)
	if err != nil {
		return err
	}
	s, err := a.openStore()
	if err != nil {
		return err
	}
	sess, err := s.OpenSession(id)
	if err != nil {
		return err
	}
	convs, err := all.SessionConversations(sess)
	sess.Close()
	if err != nil {
		return err
	}
	agentOf := map[string]string{}
	for _, c := range convs {
		if startsConversation(c, arg) {
			agentOf[c.ID] = c.Agent
		}
	}
	uuid, err := pickPrefix(arg, slices.Sorted(maps.Keys(agentOf)), "conversation")
	if err != nil {
		return err
	}
	agent, ok := agentOf[uuid]
	if !ok {
		return fmt.Errorf("session %s holds no conversation %s (sessionfs show %s lists them; sessionfs find %s says where it is)", id, arg, id, arg)
	}
	return a.resumeConversation(claudeBin, id, uuid, agent, extra)
}

// resumeConversation resumes conversation uuid of agent in session id, passing extra to the agent.
func (a resumer) resumeConversation(claudeBin, id, uuid, agent string, extra []string) error {
	argv := append([]string{claudeBin, "--resume", uuid}, extra...)
	if agent != claude.Agent.Name {
		ag, err := all.ByName(agent)
		if err != nil {
			return err
		}
		argv = append(ag.Resume(uuid), extra...)
	}
	if err := a.needAgentCLI(argv[0]); err != nil {
		return err
	}
	return a.resumeIn(id, argv, agent)
}

// resumedConversation is the conversation target names, with its holders (the owner first) and its agent: the
// conversation called target, or, when target is no session's id, the one whose id it starts (watch prints 8
// characters). claude.ErrNoConversation when it names none: then it names a session.
func resumedConversation(s *layout.Store, target string) (string, []agents.Holder, string, error) {
	if !s.Exists(target) {
		return findIndexed(s, target)
	}
	among, err := s.ConversationCandidates(func(conv string) bool { return strings.EqualFold(conv, target) })
	if err != nil {
		holders, agent, err := anyHolders(s, target)
		return target, holders, agent, err
	}
	holders, agent, err := anyHoldersAmong(s, target, among)
	return target, holders, agent, err
}

// continueSession resumes the newest Claude conversation of session arg.
func (a resumer) continueSession(claudeBin, arg string, extra []string) error {
	id, err := a.resolveID(arg)
	if errors.Is(err, layout.ErrNotFound) || errors.Is(err, layout.ErrInvalidID) {
		return fmt.Errorf("no session or conversation is called %q%s (sessionfs ls; sessionfs find UUID)", arg, a.suggestion(arg))
	} else if err != nil {
		return err
	}
	if err := a.needAgentCLI(claudeBin); err != nil {
		return err
	}
	if s, err := a.openStore(); err == nil {
		if sess, err := s.OpenSession(id); err == nil {
			if claude.CountConversations(sess) == 0 { // --continue starts one: said, not done in silence
				fmt.Fprintf(os.Stderr, "sessionfs: session %s has no Claude conversation yet: claude starts a new one\n", id)
			}
			sess.Close()
		}
	}
	return a.resumeIn(id, append([]string{claudeBin, "--continue"}, extra...), claude.Agent.Name)
}

// resumeIn runs the agent's argv in session id: on this host as exec does, or in a container as run does.
func (a resumer) resumeIn(id string, argv []string, agent string) error {
	o := a.o
	if o.backend == "local" {
		vars, err := commandEnv(o.envFiles, o.env)
		if err != nil {
			return err
		}
		return a.execIn(id, argv, func(sp *backends.Spec) { sp.Agent, sp.Env = agent, vars })
	}
	o.agent = agent
	ag, err := checkAgent(agent)
	if err != nil {
		return err
	}
	return a.runIn(id, argv, o, ag, nil)
}

// needAgentCLI checks the agent's command on this host when it runs here; in a container it is the image's.
func (a resumer) needAgentCLI(bin string) error {
	if a.o.backend != "local" {
		return nil
	}
	return needCLI(bin)
}

// npmPackages are the agents' CLIs as npm installs them, for the hint when one is missing.
var npmPackages = map[string]string{
	"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex", "gemini": "@google/gemini-cli", "qwen": "@qwen-code/qwen-code", "opencode": "opencode-ai",
	"pi": "@earendil-works/pi-coding-agent", "kimi": "@moonshot-ai/kimi-code", "copilot": "@github/copilot",
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
