package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/layout"
)

// Bounds on what is read to find a session's code: past them the piece cannot be approved (it is refused, and
// runs sandboxed), never read whole.
const (
	maxFile      = layout.MaxMetaSize // one settings file
	maxTreeFiles = 4096               // the files of one tree (plugins, extensions, skills)
	maxTreeBytes = 64 << 20           // what one tree's files hold in all
)

// Piece is one file or tree of a session that an agent carries out.
type Piece struct {
	Path  string // below the session's folder
	Agent string
	// Sum is the sha256 of Content, in hex: what an approval records.
	Sum string
	// Content is what counts, canonical: a settings file's part (agents.CodeFile.Part), a tree's list of its
	// files with their sums.
	Content []byte
	// Problem says why the piece cannot be approved (a link, not a regular file, too large); "" when it can.
	Problem string
}

// Keys are the top-level keys of a JSON piece, for a message ("hooks, env"); nil for other pieces.
func (p Piece) Keys() []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(p.Content, &m) != nil {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Code is every piece of code an agent would carry out in a session for a run in one cwd, by path.
type Code struct {
	Pieces []Piece
}

// Read finds the code of every agent in the session open as sess, for a run whose cwd is cwd below the session's
// folder ("workspace", "workspace/api"). A project's own files count in each folder from the session's root down
// to cwd, and in every folder of the session (a shell started there may cd into any of them, or through a link
// into any, before it starts an agent). Everything is read beneath sess, never through a link; what is absent is
// no piece.
//
// The agents' own folders count for the agents on (all of them when none is named): a run points only those at
// the session (Claude always, and the one of exec --agent); a project's files count for every agent, since any
// of them started in that folder reads them.
func Read(sess *layout.Dir, cwd string, on ...*agents.Agent) (Code, error) {
	var c Code
	projects, walkProblem := projectFolders(sess, cwd)
	if walkProblem != "" {
		c.Pieces = append(c.Pieces, Piece{Path: "the session's folders", Problem: walkProblem})
	}
	seen := map[string]bool{}
	for _, a := range all.Agents {
		for _, f := range a.Code {
			var places []string
			if len(on) == 0 || slices.Contains(on, a) {
				places = []string{path.Join(a.Dir, f.Path)}
			}
			if f.Project {
				places = nil
				for _, dir := range projects {
					if dir == "." && offFolder(f.Path, on) {
						continue // the session's root: there this is an agent's own folder, not pointed at
					}
					places = append(places, path.Join(dir, f.Path))
				}
			}
			for _, rel := range places {
				if seen[rel] {
					continue
				}
				seen[rel] = true
				p, ok, err := readPiece(sess, rel, f)
				if err != nil {
					return Code{}, err
				}
				if ok {
					p.Agent = a.Name
					c.Pieces = append(c.Pieces, p)
				}
			}
		}
	}
	slices.SortFunc(c.Pieces, func(a, b Piece) int { return strings.Compare(a.Path, b.Path) })
	return c, nil
}

// offFolder reports whether rel, below the session's root, lies in the folder of an agent that is not on: the run
// does not point that agent at it.
func offFolder(rel string, on []*agents.Agent) bool {
	if len(on) == 0 {
		return false
	}
	first, _, _ := strings.Cut(rel, "/")
	for _, a := range all.Agents {
		if a.Dir == first && !slices.Contains(on, a) {
			return true
		}
	}
	return false
}

// maxFolders and maxEntries bound the walk of a session for projects' settings: past either the session cannot be
// approved (a sandboxed run needs no walk). The entries' bound ends a walk of a folder its session fills as fast as
// the walk lists it. Variables for the tests.
var maxFolders, maxEntries = 50000, 1000000

// unwalked are folders the walk does not enter: a repository's objects and installed packages, where no one
// starts an agent, and which can hold more folders than the bound.
var unwalked = []string{".git", "node_modules"}

// projectFolders are the folders whose project settings count for a run in cwd, each once: those from the
// session's root down to cwd (projectPlaces) that are folders (one that is a link holds none: the run is refused
// as not in the session), and each folder of the session holding an entry named as a project's code file starts
// (.claude, .mcp.json, .env, ...). problem says why the session could not be walked whole.
func projectFolders(sess *layout.Dir, cwd string) (dirs []string, problem string) {
	seen := map[string]bool{}
	add := func(dir string) {
		if !seen[dir] {
			seen[dir] = true
			dirs = append(dirs, dir)
		}
	}
	for _, dir := range projectPlaces(cwd, "") {
		if st, err := sess.Lstat(dir); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			add(dir)
		}
	}
	starts := map[string]bool{}
	for _, a := range all.Agents {
		for _, f := range a.Code {
			if f.Project {
				first, _, _ := strings.Cut(f.Path, "/")
				starts[first] = true
			}
		}
	}
	folders, entries := 0, 0
	err := sess.WalkNames(func(rel string, typ uint8) error {
		if entries++; entries > maxEntries {
			return fmt.Errorf("more than %d files and folders to look through for projects' settings", maxEntries)
		}
		name := path.Base(rel)
		if typ == unix.DT_DIR {
			if slices.Contains(unwalked, name) {
				return layout.SkipDir
			}
			if folders++; folders > maxFolders {
				return fmt.Errorf("more than %d folders to look through for projects' settings", maxFolders)
			}
		}
		if starts[name] {
			add(path.Dir(rel))
		}
		return nil
	})
	if err != nil {
		return dirs, err.Error()
	}
	return dirs, ""
}

// projectPlaces is rel in each folder from the session's root down to cwd: an agent looks for a project's
// settings in its cwd, and some (opencode, Gemini's .env) in every folder above it.
func projectPlaces(cwd, rel string) []string {
	places := []string{path.Join(".", rel)}
	dir := ""
	for _, name := range strings.Split(path.Clean(cwd), "/") {
		if name == "" || name == "." {
			continue
		}
		dir = path.Join(dir, name)
		places = append(places, path.Join(dir, rel))
	}
	return places
}

// readPiece reads the piece at rel as f says; ok is false when there is none there (or nothing in it runs).
func readPiece(sess *layout.Dir, rel string, f agents.CodeFile) (p Piece, ok bool, err error) {
	p.Path = rel
	st, err := sess.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
		return p, false, nil
	case errors.Is(err, unix.ELOOP):
		return problem(p, "a folder on its path is a link"), true, nil
	case err != nil:
		return p, false, fmt.Errorf("%s: %w", rel, err)
	}
	switch mode := st.Mode & unix.S_IFMT; {
	case mode == unix.S_IFLNK:
		return problem(p, "a link, whose target sessionfs does not approve"), true, nil
	case f.Tree && mode == unix.S_IFDIR:
		return readTree(sess, p, f.Skip)
	case f.Tree || mode != unix.S_IFREG:
		return problem(p, "not a regular file"), true, nil
	}
	b, err := sess.ReadRegular(rel, maxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return p, false, nil
	} else if errors.Is(err, layout.ErrDamaged) {
		return problem(p, strings.TrimPrefix(err.Error(), "read "+rel+": ")), true, nil
	} else if err != nil {
		return p, false, err
	}
	if f.Part != nil {
		if part, ok := f.Part(b); ok {
			b = part
		}
	}
	if len(b) == 0 {
		return p, false, nil
	}
	return withContent(p, b), true, nil
}

// readTree reads every file beneath rel into one piece: a line of each file's sum and name (a link's is its
// target), so a file added, changed or removed changes the piece.
func readTree(sess *layout.Dir, p Piece, skip []string) (Piece, bool, error) {
	d, err := sess.Sub(p.Path)
	if err != nil {
		return problem(p, err.Error()), true, nil
	}
	defer d.Close()
	var lines []string
	var files int
	var bytes int64
	err = d.Walk(func(rel string, st *unix.Stat_t) error {
		if files++; files > maxTreeFiles {
			return fmt.Errorf("more than %d entries", maxTreeFiles)
		}
		if slices.Contains(skip, rel) && st.Mode&unix.S_IFMT == unix.S_IFREG {
			return nil
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			return nil
		case unix.S_IFLNK:
			return fmt.Errorf("%s is a link", rel)
		case unix.S_IFREG:
		default:
			return fmt.Errorf("%s is not a regular file", rel)
		}
		f, err := d.OpenRegular(rel, maxTreeBytes-bytes) // hashed as it is read: the budget is the tree's
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		n, err := io.Copy(h, io.LimitReader(f, maxTreeBytes-bytes+1))
		if bytes += n; err == nil && bytes > maxTreeBytes {
			err = fmt.Errorf("more than %d MiB", maxTreeBytes>>20)
		}
		if err != nil {
			return err
		}
		lines = append(lines, hex.EncodeToString(h.Sum(nil))+"  "+rel)
		return nil
	})
	if err != nil {
		return problem(p, err.Error()), true, nil
	}
	if len(lines) == 0 {
		return p, false, nil
	}
	slices.Sort(lines)
	return withContent(p, []byte(strings.Join(lines, "\n")+"\n")), true, nil
}

func withContent(p Piece, b []byte) Piece {
	sum := sha256.Sum256(b)
	p.Content, p.Sum = b, hex.EncodeToString(sum[:])
	return p
}

func problem(p Piece, why string) Piece {
	p.Problem = why
	return p
}
