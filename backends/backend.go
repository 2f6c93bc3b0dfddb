// Package backends runs a command for a session where the agent lives: on this host (local), in a container with
// the session bound at /session (docker), or in a Modal sandbox (modal). They share one small interface (Backend),
// and a run is one call whoever runs it (run.go): Lease takes the session's run lease, Runner.Run records the run
// in session.json around the backend's.
package backends

import (
	"context"
	"io"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/confine"
	"github.com/sessionfs/sessionfs/layout"
)

// Spec is one command to run for a session.
type Spec struct {
	SessionID string
	// SessionDir is the session's folder on this host: its path in the mount when the store is mounted (so the
	// transcript aliases apply), its store folder otherwise.
	SessionDir string
	// Folder is the session's folder in the store, open (Runner.Run opens it, and sets SessionID). Whatever a
	// backend writes into the session (links, seeds) it writes beneath Folder, never through a path the session
	// could redirect.
	Folder *layout.Dir
	Argv   []string
	// Agent is the coding agent the command runs (all.Names; "" is Claude): its variables point it at its
	// folder in the session, as the command sees the session. Claude's are set for every agent.
	Agent string
	Env   []string // extra K=V pairs, applied over the backend's defaults
	// Workdir is relative to the session's root; empty means the workspace.
	Workdir string
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	TTY     bool
	// Landlock, when set, runs the command sandboxed (confine.Command): what it lists, the session's folder and
	// the command's own file (a run on this host: exec, run --backend local).
	Landlock *confine.Command
}

// Backend runs commands for sessions. Run returns the command's exit code; err is for failures to run it at all.
// Cancelling ctx stops the command.
type Backend interface {
	Name() string
	Run(ctx context.Context, spec Spec) (exitCode int, err error)
}

// SessionEnv is the environment of the spec's command, which sees the session at root ("/session" in a
// container): agents.SessionEnv over base, less every agent's marks on its children (all.WithoutChildVars: the
// agent starts as a session of its own), with the spec's agent (an unknown one adds none: the CLI refuses it
// first), then the backend's own pairs (extra), then the user's Env.
func (s Spec) SessionEnv(base []string, root string, extra ...string) []string {
	a, _ := all.ByName(s.Agent)
	return agents.SessionEnv(all.WithoutChildVars(base), s.SessionID, root, a, slices.Concat(extra, s.Env)...)
}

// ReadOnlyMount reports whether dir is on a read-only mount (a sessionfs mount --read-only): the store's folders
// bound over it for speed are then bound read-only too, so a run cannot write where the mount refuses writes.
func ReadOnlyMount(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Flags&unix.ST_RDONLY != 0
}
