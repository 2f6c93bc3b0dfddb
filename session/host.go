package session

import (
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/trust"
)

// ApprovedOnHost is the check before an agent starts on this host in session id, unsandboxed, with its cwd at
// workdir below the session ("" for its workspace): every piece of agent configuration the session holds is one
// the user approved (trust.Check, a *trust.Refused naming what is not). Then, and only then, Claude's trust
// dialog is taken as accepted for the workspace's paths on this host (through the store and the mount at
// mountpoint): what it guards, the workspace's settings, is approved.
//
// ran is for when the run has ended: what the agent changed in its own configuration as it ran on this host, with
// the user's rights and under the run lease (Gemini saving the auth it chose, a /config), is taken as approved, as
// the user's own. A run sandboxed or in a container has no such say.
func ApprovedOnHost(s *layout.Store, id, mountpoint, workdir string) (ran func(), err error) {
	a, err := trust.UserApprovals()
	if err != nil {
		return nil, err
	}
	if err := trust.Check(s, id, workdir, a); err != nil {
		return nil, err
	}
	sess, err := s.OpenSession(id)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	if err := claude.SeedTrust(sess, Workspaces(s, id, mountpoint)[1:]); err != nil {
		return nil, err
	}
	before, err := trust.ReadSession(s, id, workdir)
	if err != nil {
		return nil, err
	}
	return func() {
		after, err := trust.ReadSession(s, id, workdir)
		if err != nil || after.Same(before) {
			return
		}
		_ = a.Approve(s.Root, id, after) // a piece that cannot be approved is refused by the next check
	}, nil
}
