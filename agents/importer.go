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

	"github.com/sessionfs/sessionfs/layout"
)

// ImportOptions say which history to import, from where, and where to.
type ImportOptions struct {
	Agent   *Agent // whose history: an agent with Files (Import); Claude's has an import of its own
	From    string // the agent's folder, e.g. ~/.claude, ~/.codex
	Project string // only conversations run in this folder or below it (or filed under its folder); "" for all
	Into    string // gather every conversation into this session; "" makes one session per conversation
	DryRun  bool
	// Sessions makes the sessions the import fills (session.Maker: seeded as every session is); nil makes plain
	// sessions of the store, their workspaces trusted nowhere.
	Sessions Sessions
	// Progress is told after each conversation; it may be nil.
	Progress func(done, total int)
}

// Sessions makes sessions and says where their workspace is seen. An import gets one from its caller:
// agents cannot make a seeded session themselves (package session, which seeds them, imports the agents).
type Sessions interface {
	// Create makes session id.
	Create(id string, opts layout.CreateOptions) error
	// Workspaces are the paths session id's workspace is known by, trusted as Prepare trusts them.
	Workspaces(id string) []string
}

// ImportReport says what an import did.
type ImportReport struct {
	Sessions  []string `json:"sessions"`  // sessions created
	Imported  []string `json:"imported"`  // conversations copied (new or grown)
	Unchanged []string `json:"unchanged"` // conversations already imported as they are
	Malformed []string `json:"malformed"` // files reported and skipped, with the reason
}

// Importer is what every agent's import does alike: where each conversation goes, the sessions it makes (or, in
// a dry run, would make) and the report.
type Importer struct {
	Store   *layout.Store
	Opts    ImportOptions
	Report  ImportReport
	planned map[string]bool // sessions a dry run would have made by now
}

// NewImporter starts an import into store.
func NewImporter(store *layout.Store, opts ImportOptions) (*Importer, error) {
	if opts.Into != "" {
		if err := layout.ValidateID(opts.Into); err != nil {
			return nil, err
		}
	}
	return &Importer{Store: store, Opts: opts, planned: map[string]bool{}}, nil
}

// Run imports each conversation of convs (their ids) with one, into Opts.Into or else into the session owner
// names (a session that holds it already is brought up to date, no second copy made), else one named after it.
func (im *Importer) Run(convs []string, owner func(conv string) string, one func(i int, id string) error) error {
	for i, conv := range convs {
		id := im.Opts.Into
		if id == "" {
			id = conv
			if o := owner(conv); o != "" {
				id = o
			}
		}
		if err := one(i, id); err != nil {
			return err
		}
		if im.Opts.Progress != nil {
			im.Opts.Progress(i+1, len(convs))
		}
	}
	return nil
}

// Session opens session id to import conversation conv into, made first (labelled imported-from: from) if need
// be. It returns nil when there is nothing more to do: a dry run counts conv as imported into a session it would
// make. The session may already exist and hold anything its processes wrote: everything in it is resolved
// beneath its folder, never through a symlink.
func (im *Importer) Session(id, conv, from string) (*layout.Dir, error) {
	if im.Opts.DryRun && im.planned[id] {
		im.Report.Imported = append(im.Report.Imported, conv)
		return nil, nil
	}
	if !im.Store.Exists(id) {
		im.Report.Sessions = append(im.Report.Sessions, id)
		if im.Opts.DryRun {
			im.planned[id] = true
			im.Report.Imported = append(im.Report.Imported, conv)
			return nil, nil
		}
		if err := im.create(id, layout.CreateOptions{Labels: map[string]string{"imported-from": from}}); err != nil {
			return nil, err
		}
	}
	return im.Store.OpenSession(id)
}

// Copies counts conversation conv as unchanged when same, else as imported, and reports whether to copy it:
// only if it changed and this is no dry run.
func (im *Importer) Copies(conv string, same bool) bool {
	if same {
		im.Report.Unchanged = append(im.Report.Unchanged, conv)
		return false
	}
	im.Report.Imported = append(im.Report.Imported, conv)
	return !im.Opts.DryRun
}

// Import adopts agent a's existing conversations (an agent with Files) into the store: each conversation file is
// copied, with its modification time, where the agent files it in a session (Codex's as they were: by date or
// archived, compressed or not, a thread's rollouts together; Gemini's, Qwen's and pi's into the folder of
// /session/workspace), and the cwds it ran in are recorded as the session's known cwds. The originals are only
// read, beneath From, no symlink followed. Running it again copies only what is new or has grown.
func Import(store *layout.Store, opts ImportOptions) (ImportReport, error) {
	a := opts.Agent
	if a == nil || a.Files == nil {
		return ImportReport{}, errors.New("import: not an agent with Files")
	}
	im, err := NewImporter(store, opts)
	if err != nil {
		return ImportReport{}, err
	}
	src, err := layout.OpenDir(opts.From)
	if err != nil {
		return im.Report, fmt.Errorf("import from %s: %w", opts.From, err)
	}
	defer src.Close()
	var convs []Conversation
	var from [][]File
	for _, fs := range a.grouped(src, "") {
		c, read := summarise(src, fs)
		if len(read) == 0 {
			continue
		}
		f := read[0]
		switch {
		case c.Size > 0 && c.Messages == 0 && c.Malformed > 0 && len(c.Cwds) == 0:
			im.Report.Malformed = append(im.Report.Malformed, fmt.Sprintf("%s: no line of it is a %s conversation entry", filepath.Join(opts.From, f.Rel), a.Name))
			continue
		case layout.ValidateID(c.ID) != nil:
			im.Report.Malformed = append(im.Report.Malformed, fmt.Sprintf("%s: %q is not a conversation id", filepath.Join(opts.From, f.Rel), c.ID))
			continue
		case !ofProject(src, f, c, opts.Project):
			continue
		}
		convs, from = append(convs, c), append(from, read)
	}
	ids := make([]string, len(convs))
	for i, c := range convs {
		ids[i] = c.ID
	}
	owner := func(conv string) string {
		if hs, err := Holders(store, conv, []*Agent{a}); err == nil && len(hs) > 0 {
			return hs[0].ID
		}
		return ""
	}
	err = im.Run(ids, owner, func(i int, id string) error { return im.importFile(src, from[i], convs[i], id) })
	return im.Report, err
}

// ofProject: conversation c (file f) ran in project or below it, or was filed under project's folder.
func ofProject(src *layout.Dir, f File, c Conversation, project string) bool {
	if project == "" || InProject(c.Cwds, project) {
		return true
	}
	if abs, err := filepath.Abs(project); err == nil {
		project = abs
	}
	in := f.Agent.Files.InProject
	return in != nil && in(src, strings.Split(f.Rel, "/")[1], project) // tmp/<folder>/chats/...
}

// InProject reports whether one of cwds is project or below it (import --project); "" is every project.
func InProject(cwds []string, project string) bool {
	if project == "" {
		return true
	}
	if abs, err := filepath.Abs(project); err == nil {
		project = abs
	}
	below := strings.TrimSuffix(project, "/") + "/" // "/" holds everything
	return slices.ContainsFunc(cwds, func(cwd string) bool { return cwd == project || strings.HasPrefix(cwd, below) })
}

// target is where conversation file f (rel beneath its agent's folder) goes in a session.
func target(f File) string {
	a := f.Agent
	if len(a.Views) == 0 {
		return a.Dir + "/" + f.Rel // Codex: sessions/YYYY/MM/DD/<name> or archived_sessions/<name>, as it was
	}
	v := a.Views[0] // Gemini's tmp, Qwen's projects, pi's sessions: the canonical folder's chats
	return path.Join(a.Dir, v.Dir, v.Canonical, a.Files.Sub, path.Base(f.Rel))
}

// importFile copies conversation c's files fs (those it was read from: a thread's rollouts, each as it is, plain
// or compressed) from src into session id (made if need be), prepared for its agent.
func (im *Importer) importFile(src *layout.Dir, fs []File, c Conversation, id string) error {
	a := fs[0].Agent
	sess, err := im.Session(id, c.ID, a.Name)
	if sess == nil || err != nil {
		return err
	}
	defer sess.Close()
	same := true
	for _, f := range fs {
		same = same && sameFile(src, f.Rel, sess, target(f))
	}
	if !im.Copies(c.ID, same) {
		return nil
	}
	if err := Prepare(sess, a, im.Workspaces(id)); err != nil {
		return err
	}
	rels := make([]string, len(fs))
	for i, f := range fs {
		if err := copyFile(src, f.Rel, sess, target(f)); err != nil {
			return fmt.Errorf("import %s: %w", filepath.Join(im.Opts.From, f.Rel), err)
		}
		rels[i] = f.Rel
	}
	if a.Imported != nil && len(a.Views) == 0 { // filed as they were (target)
		if err := a.Imported(src, sess, rels); err != nil {
			return fmt.Errorf("import %s: %w", filepath.Join(im.Opts.From, path.Dir(fs[0].Rel)), err)
		}
	}
	_, err = im.Store.Update(id, func(m *layout.Meta) error {
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
	uid, gid, err := sess.Owner()
	if err != nil {
		return err
	}
	return CopyFile(in, sess, rel, uid, gid)
}

// CopyFile copies in over rel beneath sess through a temporary file (a reader never sees half a conversation),
// with in's mode and modification time and owner uid, gid.
func CopyFile(in *os.File, sess *layout.Dir, rel string, uid, gid int) error {
	st, err := in.Stat()
	if err != nil {
		return err
	}
	if err := sess.MkdirAll(path.Dir(rel), 0o755, uid, gid); err != nil {
		return err
	}
	return sess.WriteAtomicFrom(rel, in, uint32(st.Mode().Perm()), uid, gid, st.ModTime())
}

// create makes session id with the caller's Sessions, or as a plain session of the store.
func (im *Importer) create(id string, opts layout.CreateOptions) error {
	if im.Opts.Sessions != nil {
		return im.Opts.Sessions.Create(id, opts)
	}
	_, err := im.Store.Create(id, opts)
	return err
}

// Workspaces are the paths session id's workspace is known by (Sessions.Workspaces; none without Sessions).
func (im *Importer) Workspaces(id string) []string {
	if im.Opts.Sessions == nil {
		return nil
	}
	return im.Opts.Sessions.Workspaces(id)
}
