package trust

import (
	"fmt"
	"path"
	"strings"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// Change is a piece of code a run would carry out that the user has not approved as it is.
type Change struct {
	Piece
	How string // "new", "changed since you approved it", or why it cannot be approved
}

func (c Change) String() string {
	s := c.Path
	if keys := c.Keys(); len(keys) > 0 {
		s += " (" + strings.Join(keys, ", ") + ")"
	}
	return s + ": " + c.How
}

// Unapproved are the pieces of c that r does not approve as they are.
func Unapproved(c Code, r Record) []Change {
	var out []Change
	for _, p := range c.Pieces {
		switch sum, ok := r.Sums[p.Path]; {
		case p.Problem != "":
			out = append(out, Change{p, "cannot be approved: " + p.Problem})
		case !ok:
			out = append(out, Change{p, "new"})
		case sum != p.Sum:
			out = append(out, Change{p, "changed since you approved it"})
		}
	}
	return out
}

// Refused is the error of a run Check stops: what the session holds that the user has not approved.
type Refused struct {
	Session string
	Cwd     string // below the session's folder, as Check was given it
	Changes []Change
}

func (e *Refused) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "session %s holds agent configuration that would run commands on this host as you, unapproved:\n", e.Session)
	for _, c := range e.Changes {
		fmt.Fprintf(&b, "  %s\n", c)
	}
	b.WriteString("A session's processes write it (its agent, a container, an import): it starts nothing here unseen.\n")
	approve := "sessionfs approve " + e.Session
	if e.Cwd != layout.WorkspaceDir {
		approve += " -w " + path.Join(layout.ContainerRoot, e.Cwd)
	}
	fmt.Fprintf(&b, "Look at it and approve it:  %s\n", approve)
	fmt.Fprintf(&b, "or run the agent sandboxed: sessionfs exec --landlock %s -- CMD, or sessionfs run --backend docker", e.Session)
	return b.String()
}

// Check lets an agent start on this host in session id of store s, with its cwd at cwd below the session's folder
// ("" is its workspace) and the agents on pointed at the session (Read), when every piece of code it would carry
// out is the one the user approved (as Approvals a holds them), or there is none. Otherwise it returns a *Refused
// naming each piece.
func Check(s *layout.Store, id, cwd string, a Approvals, on ...*agents.Agent) error {
	c, err := ReadSession(s, id, cwd, on...)
	if err != nil {
		return err
	}
	if len(c.Pieces) == 0 {
		return nil
	}
	r, err := a.Get(s.Root, id)
	if err != nil {
		return err
	}
	if changes := Unapproved(c, r); len(changes) > 0 {
		return &Refused{Session: id, Cwd: WorkdirPath(cwd), Changes: changes}
	}
	return nil
}

// ReadSession reads the code of session id of store s for a run in cwd (Read).
func ReadSession(s *layout.Store, id, cwd string, on ...*agents.Agent) (Code, error) {
	sess, err := s.OpenSession(id)
	if err != nil {
		return Code{}, err
	}
	defer sess.Close()
	return Read(sess, WorkdirPath(cwd), on...)
}

// WorkdirPath is a run's cwd below the session's folder for its workdir, as exec's -w gives it (relative to the
// session; "" is the workspace).
func WorkdirPath(workdir string) string {
	if workdir == "" {
		return layout.WorkspaceDir
	}
	return workdir
}
