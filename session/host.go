package session

import (
	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/trust"
)

// ApprovedOnHost is the check before an agent starts on this host in session id, unsandboxed, with its cwd at
// workdir below the session ("" for its workspace), Claude and agent a (nil: none more) pointed at the session: every piece of agent configuration the session holds is one
// the user approved (trust.Check, a *trust.Refused naming what is not). Then, and only then, Claude's trust
// dialog is taken as accepted for the workspace's paths on this host (through the store and the mount at
// mountpoint): what it guards, the workspace's settings, is approved. What the agent changes in its configuration
// as it runs is approved by no one: a writer outside the run lease (a container left running, a plain docker run
// -v) could have made the change as well.
func ApprovedOnHost(s *layout.Store, id, mountpoint, workdir string, a *agents.Agent) error {
	approvals, err := trust.UserApprovals()
	if err != nil {
		return err
	}
	on := []*agents.Agent{claude.Agent}
	if a != nil {
		on = append(on, a)
	}
	if err := trust.Check(s, id, workdir, approvals, on...); err != nil {
		return err
	}
	sess, err := s.OpenSession(id)
	if err != nil {
		return err
	}
	defer sess.Close()
	return claude.SeedTrust(sess, Workspaces(s, id, mountpoint)[1:])
}
