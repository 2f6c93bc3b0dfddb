package backends

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/layout"
)

// ErrNoTrace marks a run whose agent was asked for a turn, exited 0, and recorded nothing in the session.
var ErrNoTrace = errors.New("the turn is lost")

// traced is an agent's trace in a session before a run that asks it for a turn (agents.Agent.Trace); the zero
// value judges nothing.
type traced struct {
	agent  *agents.Agent
	before string
}

// turnTrace is the trace of the agent argv runs, before it runs, when argv asks it for a turn it records (claude
// -p, codex exec, gemini -p, opencode run). The one check every backend's runs go through (Runner.Run).
func turnTrace(folder *layout.Dir, argv []string) traced {
	if len(argv) == 0 {
		return traced{}
	}
	a, err := all.ByName(filepath.Base(argv[0]))
	if err != nil || filepath.Base(argv[0]) != a.Name || a.AsksTurn == nil || !a.AsksTurn(argv[1:]) {
		return traced{}
	}
	before, err := a.Trace(folder)
	if err != nil {
		return traced{}
	}
	return traced{agent: a, before: before}
}

// lost says, once the agent exited 0, whether it recorded nothing: an error naming where it should have, and
// what may have kept it from there.
func (t traced) lost(folder *layout.Dir, id string) error {
	if t.agent == nil {
		return nil
	}
	after, err := t.agent.Trace(folder)
	if err != nil || after != t.before {
		return nil
	}
	why := ""
	if st, err := folder.Lstat(path.Join(t.agent.Dir, t.agent.Records[0])); err == nil {
		why = fmt.Sprintf(" (owned by uid %d, mode %04o)", st.Uid, st.Mode&0o7777)
		if os.Geteuid() != 0 && int(st.Uid) != os.Geteuid() {
			why += fmt.Sprintf("; you are uid %d", os.Geteuid())
		}
	}
	return fmt.Errorf("%w: %s exited 0, but session %s recorded nothing in %s%s. The agent's user (a container's: --user) must be able to write there, and its config must be the session's (nothing in -e may point %s elsewhere)",
		ErrNoTrace, t.agent.Name, id, t.agent.Where(), why, t.agent.Var)
}
