package agents

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/sessionfs/sessionfs/claude"
	"github.com/sessionfs/sessionfs/layout"
)

// ImportOptions say which agent's history to import, from where, and where to.
type ImportOptions struct {
	Agent   *Agent
	From    string // the agent's folder, e.g. ~/.codex
	Project string // only conversations run in this folder or below it; "" for all
	Into    string // gather every conversation into this session; "" makes one session per conversation
	DryRun  bool
	// Workspaces are the paths session id's workspace is known by, trusted as Prepare trusts them.
	Workspaces func(id string) []string
	// Progress is told after each conversation; it may be nil.
	Progress func(done, total int)
}

// Home is where the agent keeps its state for this user: its variable's folder when set, else ~/<Dir>.
func (a *Agent) Home() (string, error) {
	if v := os.Getenv(a.Var); v != "" {
		if a.VarIsParent {
			return filepath.Join(v, a.Dir), nil
		}
		return v, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, a.Dir), nil
}

// Import adopts an agent's existing conversations into the store: each conversation file is copied, with its
// modification time, where the agent files it in a session (Codex's by date as they were; Gemini's and Qwen's
// into the folder of /session/workspace), and the cwds it ran in are recorded as the session's known cwds. The
// originals are only read, beneath From, no symlink followed. Running it again copies only what is new or has
// grown.
func Import(store *layout.Store, opts ImportOptions) (claude.ImportReport, error) {
	var rep claude.ImportReport
	a := opts.Agent
	if a == nil || a == Claude {
		return rep, errors.New("import: not an agent of package agents")
	}
	if opts.Into != "" {
		if err := layout.ValidateID(opts.Into); err != nil {
			return rep, err
		}
	}
	src, err := layout.OpenDir(opts.From)
	if err != nil {
		return rep, fmt.Errorf("import from %s: %w", opts.From, err)
	}
	defer src.Close()
	var convs []Conversation
	var from []file
	for _, f := range agentFiles(src, a, "") {
		c, ok := summarise(src, f)
		switch {
		case !ok:
			continue
		case c.Size > 0 && c.Messages == 0 && c.Malformed > 0 && len(c.Cwds) == 0:
			rep.Malformed = append(rep.Malformed, fmt.Sprintf("%s: no line of it is a %s conversation entry", filepath.Join(opts.From, f.rel), a.Name))
			continue
		case layout.ValidateID(c.ID) != nil:
			rep.Malformed = append(rep.Malformed, fmt.Sprintf("%s: %q is not a conversation id", filepath.Join(opts.From, f.rel), c.ID))
			continue
		case !ofProject(src, a, f, c, opts.Project):
			continue
		}
		convs, from = append(convs, c), append(from, f)
	}
	planned := map[string]bool{} // sessions a dry run would have made by now
	for i, c := range convs {
		id := opts.Into
		if id == "" {
			// One session per conversation, unless a session holds it already: that one is brought up to date.
			id = c.ID
			if hs, err := Holders(store, c.ID); err == nil && len(hs) > 0 {
				id = hs[0].ID
			}
		}
		if err := importOne(store, src, a, from[i], c, id, opts, planned, &rep); err != nil {
			return rep, err
		}
		if opts.Progress != nil {
			opts.Progress(i+1, len(convs))
		}
	}
	return rep, nil
}

// ofProject: conversation c (file f) ran in project or below it, or was filed under project's folder.
func ofProject(src *layout.Dir, a *Agent, f file, c Conversation, project string) bool {
	if project == "" {
		return true
	}
	if abs, err := filepath.Abs(project); err == nil {
		project = abs
	}
	if slices.ContainsFunc(c.Cwds, func(cwd string) bool { return cwd == project || strings.HasPrefix(cwd, project+"/") }) {
		return true
	}
	folder := strings.Split(f.rel, "/")[1] // tmp/<folder>/chats/..., projects/<folder>/chats/...
	switch a {
	case Qwen:
		return folder == QwenFolder(project)
	case Gemini:
		// Gemini's chats hold no cwd: the folder is the one projects.json gives the path, or (before it) its hash.
		if folder == PathHash(project) {
			return true
		}
		found := false
		_ = mergeJSONRead(src, "projects.json", func(m map[string]any) {
			projects, _ := m["projects"].(map[string]any)
			found = projects != nil && projects[project] == folder
		})
		return found
	}
	return false
}

// mergeJSONRead reads the JSON object rel beneath d, as mergeJSON does, and hands it to read.
func mergeJSONRead(d *layout.Dir, rel string, read func(map[string]any)) error {
	return mergeJSON(d, rel, 0, -1, -1, func(m map[string]any) bool { read(m); return false })
}

// target is where agent a files conversation file f (rel beneath its folder) in a session.
func target(a *Agent, f file) string {
	if len(a.Views) == 0 {
		return a.Dir + "/" + f.rel // Codex: sessions/YYYY/MM/DD/<name>, as it was
	}
	v := a.Views[0] // Gemini's tmp, Qwen's projects: the canonical folder's chats
	return a.Dir + "/" + v.Dir + "/" + v.Canonical + "/chats/" + path.Base(f.rel)
}

func importOne(store *layout.Store, src *layout.Dir, a *Agent, f file, c Conversation, id string, opts ImportOptions,
	planned map[string]bool, rep *claude.ImportReport) error {
	if opts.DryRun && planned[id] {
		rep.Imported = append(rep.Imported, c.ID)
		return nil
	}
	if !store.Exists(id) {
		rep.Sessions = append(rep.Sessions, id)
		if opts.DryRun {
			planned[id] = true
			rep.Imported = append(rep.Imported, c.ID)
			return nil
		}
		if _, err := store.Create(id, layout.CreateOptions{Labels: map[string]string{"imported-from": a.Name}}); err != nil {
			return err
		}
	}
	// The session may already exist and hold anything its processes wrote: everything in it is resolved beneath
	// its folder, never through a symlink.
	sess, err := store.OpenSession(id)
	if err != nil {
		return err
	}
	defer sess.Close()
	dst := target(a, f)
	if sameFile(src, f.rel, sess, dst) {
		rep.Unchanged = append(rep.Unchanged, c.ID)
		return nil
	}
	rep.Imported = append(rep.Imported, c.ID)
	if opts.DryRun {
		return nil
	}
	var ws []string
	if opts.Workspaces != nil {
		ws = opts.Workspaces(id)
	}
	if err := Prepare(sess, a, ws); err != nil {
		return err
	}
	if err := copyFile(src, f.rel, sess, dst); err != nil {
		return fmt.Errorf("import %s: %w", filepath.Join(opts.From, f.rel), err)
	}
	_, err = store.Update(id, func(m *layout.Meta) error {
		for _, cwd := range c.Cwds {
			m.AddCwd(cwd)
		}
		return nil
	})
	return err
}

// sameFile reports whether rel beneath sess is already a copy of from beneath src: a regular file of the same
// size and modification time.
func sameFile(src *layout.Dir, from string, sess *layout.Dir, rel string) bool {
	a, err := src.Lstat(from)
	if err != nil {
		return false
	}
	b, err := sess.Lstat(rel)
	return err == nil && b.Mode&syscall.S_IFMT == syscall.S_IFREG && a.Size == b.Size && a.Mtim == b.Mtim
}

// copyFile copies from (beneath src) over rel beneath sess through a temporary file, with its mode and
// modification time and the session's owner.
func copyFile(src *layout.Dir, from string, sess *layout.Dir, rel string) error {
	in, err := src.OpenRegular(from, -1)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	uid, gid, err := sess.Owner()
	if err != nil {
		return err
	}
	if err := sess.MkdirAll(path.Dir(rel), 0o755, uid, gid); err != nil {
		return err
	}
	return sess.WriteAtomicFrom(rel, in, uint32(st.Mode().Perm()), uid, gid, st.ModTime())
}
