package claude

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// Source is a conversation found in a Claude Code config dir: projects/<folder>/<uuid>.jsonl and its <uuid>/
// sidecar folder.
type Source struct {
	UUID    string
	Folder  string // the sanitized-cwd folder it was found in
	Path    string
	Sidecar string // "" when there is none
	Cwds    []string
	Size    int64
	ModTime time.Time
}

// FindSources lists the conversations under configDir/projects, in a stable order. Transcripts in which no line
// parses are returned in malformed, with the reason, and left out of sources.
func FindSources(configDir string) (sources []Source, malformed []string, err error) {
	folders, err := os.ReadDir(filepath.Join(configDir, "projects"))
	if err != nil {
		return nil, nil, err
	}
	for _, f := range folders {
		if !f.IsDir() {
			continue
		}
		dir := filepath.Join(configDir, "projects", f.Name())
		ents, err := os.ReadDir(dir)
		if err != nil {
			malformed = append(malformed, fmt.Sprintf("%s: %v", dir, err))
			continue
		}
		for _, e := range ents {
			if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".jsonl") {
				continue
			}
			p := filepath.Join(dir, e.Name())
			c, err := ReadConversation(p)
			switch {
			case err != nil:
				malformed = append(malformed, fmt.Sprintf("%s: %v", p, err))
				continue
			case c.Size > 0 && c.Malformed > 0 && c.Messages == 0 && len(c.Cwds) == 0:
				malformed = append(malformed, fmt.Sprintf("%s: no line of it is a transcript entry", p))
				continue
			case layout.ValidateID(c.ID) != nil:
				malformed = append(malformed, fmt.Sprintf("%s: %q is not a conversation id", p, c.ID))
				continue
			}
			fi, err := e.Info()
			if err != nil {
				continue
			}
			s := Source{UUID: c.ID, Folder: f.Name(), Path: p, Cwds: c.Cwds, Size: fi.Size(), ModTime: fi.ModTime()}
			if st, err := os.Lstat(filepath.Join(dir, c.ID)); err == nil && st.IsDir() {
				s.Sidecar = filepath.Join(dir, c.ID)
			}
			sources = append(sources, s)
		}
	}
	sort.Slice(sources, func(i, j int) bool { return sources[i].Path < sources[j].Path })
	return sources, malformed, nil
}

// Import adopts existing Claude Code history into the store: each conversation's transcript and sidecar are
// copied into a session's canonical folder with their modification times, and the cwds it ran in are recorded
// as the session's known cwds and aliases. The originals are only read. Running it again copies only what is new
// or has grown.
func Import(store *layout.Store, opts agents.ImportOptions) (agents.ImportReport, error) {
	im, err := agents.NewImporter(store, opts)
	if err != nil {
		return agents.ImportReport{}, err
	}
	sources, malformed, err := FindSources(opts.From)
	if err != nil {
		return im.Report, fmt.Errorf("import from %s: %w", opts.From, err)
	}
	im.Report.Malformed = malformed
	sources = filterProject(sources, opts.Project)
	uuids := make([]string, len(sources))
	for i, src := range sources {
		uuids[i] = src.UUID
	}
	owner := func(uuid string) string {
		owner, _ := Find(store, uuid)
		return owner
	}
	err = im.Run(uuids, owner, func(i int, id string) error { return importOne(im, id, sources[i]) })
	return im.Report, err
}

// filterProject keeps the conversations of project: found in its folder, or run in it or below it.
func filterProject(sources []Source, project string) []Source {
	if project == "" {
		return sources
	}
	abs, err := filepath.Abs(project)
	if err == nil {
		project = abs
	}
	folder := Resolve(project)
	var out []Source
	for _, s := range sources {
		keep := s.Folder == folder
		for _, cwd := range s.Cwds {
			keep = keep || cwd == project || strings.HasPrefix(cwd, project+"/")
		}
		if keep {
			out = append(out, s)
		}
	}
	return out
}

func importOne(im *agents.Importer, id string, src Source) error {
	sess, err := im.Session(id, src.UUID, src.Folder)
	if sess == nil || err != nil {
		return err
	}
	defer sess.Close()
	if err := SeedSettings(sess); err != nil {
		return err
	}
	canonical := layout.ProjectsDir + "/" + layout.CanonicalProject
	dst := canonical + "/" + src.UUID + ".jsonl"
	sidecar := canonical + "/" + src.UUID
	if !im.Copies(src.UUID, same(sess, src.Path, dst) && (src.Sidecar == "" || sameTree(sess, src.Sidecar, sidecar))) {
		return nil
	}
	uid, gid, err := sess.Owner()
	if err != nil {
		return err
	}
	if err := copyKeepingTime(src.Path, sess, dst, uid, gid); err != nil {
		return fmt.Errorf("import %s: %w", src.Path, err)
	}
	if src.Sidecar != "" {
		if err := copyTree(src.Sidecar, sess, sidecar, uid, gid); err != nil {
			return fmt.Errorf("import %s: %w", src.Sidecar, err)
		}
	}
	_, err = im.Store.Update(id, func(m *layout.Meta) error {
		for _, cwd := range src.Cwds {
			m.AddCwd(cwd)
			m.AddAlias(Sanitize(cwd))
		}
		m.AddAlias(src.Folder)
		return nil
	})
	return err
}

// same reports whether rel beneath sess is already a copy of src: a regular file of the same size and
// modification time.
func same(sess *layout.Dir, src, rel string) bool {
	a, err := os.Stat(src)
	if err != nil {
		return false
	}
	b, err := sess.Lstat(rel)
	return err == nil && b.Mode&syscall.S_IFMT == syscall.S_IFREG && a.Size() == b.Size &&
		a.ModTime().Equal(time.Unix(b.Mtim.Unix()))
}

func sameTree(sess *layout.Dir, src, rel string) bool {
	equal := true
	_ = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		r, _ := filepath.Rel(src, p)
		if !same(sess, p, rel+"/"+filepath.ToSlash(r)) {
			equal = false
			return fs.SkipAll
		}
		return nil
	})
	return equal
}

// copyTree copies the regular files and folders of src into rel beneath sess. Symlinks are not followed: a
// transcript folder holds none, and following one could pull files from anywhere into a session.
func copyTree(src string, sess *layout.Dir, rel string, uid, gid int) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(src, p)
		target := rel
		if r != "." {
			target += "/" + filepath.ToSlash(r)
		}
		switch {
		case d.IsDir():
			return sess.MkdirAll(target, 0o755, uid, gid)
		case d.Type().IsRegular():
			if same(sess, p, target) {
				return nil
			}
			return copyKeepingTime(p, sess, target, uid, gid)
		}
		return nil
	})
}

// copyKeepingTime copies src over rel beneath sess through a temporary file (a reader never sees half a
// transcript), with src's mode and modification time and the session's owner.
func copyKeepingTime(src string, sess *layout.Dir, rel string, uid, gid int) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return agents.CopyFile(in, sess, rel, uid, gid)
}
