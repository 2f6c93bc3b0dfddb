package session

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// PrepareAgent makes agent a's folder in session id on demand (written in the store beneath the session's folder
// fd) and seeds what it needs to start there: the same workspaces are trusted as for Claude (Workspaces, with the
// store mounted at mountpoint, "" when it is not). A folder the session made something else (a symlink out of it)
// is refused: the agent would follow it. A seed that cannot be written is only a warning, returned. Claude's
// folder is made and seeded with every session (Seed): nothing is done for it.
func PrepareAgent(s *layout.Store, id string, a *agents.Agent, mountpoint string) (warnings []string, err error) {
	if a.Always {
		return nil, nil
	}
	sess, err := s.OpenSession(id)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	if st, err := sess.Lstat(a.Dir); err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, fmt.Errorf("session %s: its %s is not a folder (a link?); the %s agent would follow it: refused", id, a.Dir, a.Name)
	}
	if err := agents.Prepare(sess, a, Workspaces(s, id, mountpoint)); err != nil {
		return []string{fmt.Sprintf("prepare %s: %v", a.Dir, err)}, nil
	}
	return nil, nil
}

// LaunchAgent readies agent a's state in session id for a run that sees the session at root and starts in workdir
// below it (the workspace when ""): opencode's conversations follow the cwd. It runs each time sessionfs starts
// the agent. A failure is only a warning, returned: the agent starts as it would have.
func LaunchAgent(s *layout.Store, id string, a *agents.Agent, root, workdir string) (warnings []string) {
	if a == nil || a.Launch == nil {
		return nil
	}
	sess, err := s.OpenSession(id)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", a.Name, err)}
	}
	defer sess.Close()
	cwd := layout.Derive(root).Workspace
	if workdir != "" {
		cwd = filepath.Join(root, workdir)
	}
	if err := a.Launch(sess, root, cwd); err != nil {
		return []string{fmt.Sprintf("%s: its conversations stay where they were: %v", a.Name, err)}
	}
	return nil
}
