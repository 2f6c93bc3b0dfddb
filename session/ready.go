package session

import (
	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// Ready makes session id ready for agent a (nil: none but Claude) to start in, for a run that sees the session at
// root and starts in workdir below it: its .claude seeded (Seed), a's folder prepared (PrepareAgent) and a's
// state launched (LaunchAgent), with the store mounted at mountpoint ("" when it is not). What is only worth a
// warning is returned as warnings; an error means the agent must not start.
func Ready(s *layout.Store, id string, a *agents.Agent, mountpoint, root, workdir string) (warnings []string, err error) {
	if err := Seed(s, id, mountpoint); err != nil {
		warnings = append(warnings, err.Error())
	}
	if a == nil {
		return warnings, nil
	}
	prepared, err := PrepareAgent(s, id, a, mountpoint)
	warnings = append(warnings, prepared...)
	if err != nil {
		return warnings, err
	}
	return append(warnings, LaunchAgent(s, id, a, root, workdir)...), nil
}
