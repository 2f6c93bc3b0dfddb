package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/session"
)

const agentHelp = "the coding agent the command runs (claude, codex, gemini, qwen, opencode): its variables point it at its folder in the session"

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

// prepareAgent makes agent a's folder in session id on demand (written in the store beneath the session's folder
// fd) and seeds what it needs to start there: the same workspaces are trusted as for Claude. A folder the session
// made something else (a symlink out of it) is refused: the agent would follow it. A seed that cannot be written
// is only a warning.
func prepareAgent(s *layout.Store, id, dir string, mounted bool, a *agents.Agent) error {
	if a == claude.Agent {
		return nil
	}
	sess, err := s.OpenSession(id)
	if err != nil {
		return err
	}
	defer sess.Close()
	if st, err := sess.Lstat(a.Dir); err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("session %s: its %s is not a folder (a link?); the %s agent would follow it: refused", id, a.Dir, a.Name)
	}
	if err := agents.Prepare(sess, a, session.Workspaces(s, id, mountpoint(s))); err != nil {
		warnf("prepare %s: %v", a.Dir, err)
	}
	return nil
}

// launchAgent readies agent a's state in session id for a run whose cwd, as the agent sees it, is cwd (opencode's
// conversations follow it). A failure is only a warning: the agent starts as it would have.
func launchAgent(s *layout.Store, id string, a *agents.Agent, cwd string) {
	if a == nil || a.Launch == nil {
		return
	}
	sess, err := s.OpenSession(id)
	if err != nil {
		warnf("%s: %v", a.Name, err)
		return
	}
	defer sess.Close()
	if err := a.Launch(sess, cwd); err != nil {
		warnf("%s: its conversations stay where they were: %v", a.Name, err)
	}
}

// agentCwd is the cwd a run starts in as it sees it: workdir (relative to the session) below root, the session's
// root as the run sees it, else the workspace.
func agentCwd(root, workdir string) string {
	if workdir == "" {
		return layout.Derive(root).Workspace
	}
	return filepath.Join(root, workdir)
}
