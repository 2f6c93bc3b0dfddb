package session

import (
	"os"
	"path/filepath"

	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/layout"
)

// Options say how to make a session.
type Options struct {
	layout.CreateOptions
	// Mountpoint is where the store is mounted ("" when it is not): the session's workspace there is trusted as
	// its other paths are.
	Mountpoint string
	// User is the Claude state of the user who asked for the session (UserClaude), merged under the seeds; nil:
	// none (a session made by the daemon or the CSI plugin, whose home is not the user's).
	User *claude.UserState
	// Warn is told what could not be seeded from User: a warning, never a failure of Create. Nil drops it.
	Warn func(string)
}

// Create makes session id in s and seeds its .claude from opts.User, then as every session's (Seed). All or nothing: a session that could not be
// seeded (a full disk, say) goes to the trash and is emptied, so the same request works once there is room.
func Create(s *layout.Store, id string, opts Options) (*layout.Meta, error) {
	m, err := s.Create(id, opts.CreateOptions)
	if err != nil {
		return nil, err
	}
	clearSharedCredentials(s, id)
	seedUser(s, id, opts)
	if err := Seed(s, id, opts.Mountpoint); err != nil {
		if trashed, rerr := s.Remove(id); rerr == nil {
			_ = os.RemoveAll(trashed)
		}
		return nil, err
	}
	return m, nil
}

// Seed makes session id's .claude safe for Claude Code: transcripts are never aged out, and the session's
// workspace is trusted where the session sees itself (/session/workspace, in a container or a sandbox); its paths
// on this host are trusted only once the user approved what the session holds (ApprovedOnHost). It writes beneath the session's folder descriptor, never through the
// mount nor a path the session could redirect with a symlink (the mount seeds from inside mkdir, where a
// request to itself would never be answered).
func Seed(s *layout.Store, id, mountpoint string) error {
	sess, err := s.OpenSession(id)
	if err != nil {
		return err
	}
	defer sess.Close()
	if err := claude.SeedSettings(sess); err != nil {
		return err
	}
	return claude.SeedTrust(sess, Workspaces(s, id, mountpoint)[:1])
}

// Workspaces are the paths at which session id's workspace is seen: in containers, in the store, and through the
// mount when there is one.
func Workspaces(s *layout.Store, id, mountpoint string) []string {
	ws := []string{layout.ContainerPaths.Workspace, layout.Derive(s.Dir(id)).Workspace}
	if mountpoint != "" {
		ws = append(ws, layout.Derive(Path(mountpoint, id)).Workspace)
	}
	return ws
}

// Path is session id's folder on a mount of its store at mountpoint.
func Path(mountpoint, id string) string {
	return filepath.Join(mountpoint, "sessions", id) // the mount shows the store's sessions folder by its name
}

// Maker makes sessions in Store as Create does, with the store mounted at Mountpoint ("" when it is not): what an
// import is given to make the sessions it fills (agents.Sessions).
type Maker struct {
	Store      *layout.Store
	Mountpoint string
}

// Create makes session id, seeded.
func (m Maker) Create(id string, opts layout.CreateOptions) error {
	_, err := Create(m.Store, id, Options{CreateOptions: opts, Mountpoint: m.Mountpoint})
	return err
}

// Workspaces are the paths session id's workspace is known by (Workspaces).
func (m Maker) Workspaces(id string) []string { return Workspaces(m.Store, id, m.Mountpoint) }
