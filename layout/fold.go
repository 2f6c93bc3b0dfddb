package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

// FoldProjects moves what Claude Code filed under other folders of a session's .claude/projects (a session used
// without the mount gets one folder per cwd) into the canonical folder, so every view of it shows everything. A
// name already taken in the canonical folder keeps both: the incoming one gets a .sessionfs-conflict-fold
// suffix. It returns the names of the folders it emptied, which were aliases in use.
func FoldProjects(sessionDir string) (folded []string, err error) {
	d, err := OpenDir(sessionDir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return FoldProjectsIn(d)
}

// Fold is FoldProjects for session id of the store.
func (s *Store) Fold(id string) ([]string, error) {
	d, err := s.OpenSession(id)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	folded, err := FoldProjectsIn(d)
	if err != nil {
		return folded, wrap("fold", id, s.Dir(id), err)
	}
	return folded, nil
}

// FoldProjectsIn folds the session open as sess. Everything is resolved beneath sess and no symlink is followed:
// a session that made its canonical folder (or any folder on the way) a link out of itself gets an error, and
// nothing is moved. A projects folder that is a symlink is left alone; symlinks inside a folder being folded are
// moved as links (renamed within the session, never followed). Folders made get the session folder's owner.
func FoldProjectsIn(sess *Dir) (folded []string, err error) {
	return FoldViewsIn(sess, ProjectsDir, CanonicalProject, func(string) bool { return true }, "")
}

// FoldViews is FoldViewsIn for session id of the store.
func (s *Store) FoldViews(id, dir, canonical string, isView func(string) bool, keep string) ([]string, error) {
	d, err := s.OpenSession(id)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	folded, err := FoldViewsIn(d, dir, canonical, isView, keep)
	if err != nil {
		return folded, wrap("fold", id, s.Dir(id), err)
	}
	return folded, nil
}

// FoldViewsIn is the fold of any agent's cwd-keyed folder dir (beneath sess): the entries of every real folder
// in dir whose name isView accepts, other than canonical, move into canonical, and the emptied folders go. A
// file named keep (an agent's claim on its folder name, such as Gemini's .project_root) stays, and so does its
// folder. It returns the names of the folders it emptied or moved something out of. Resolution is as for
// FoldProjectsIn.
func FoldViewsIn(sess *Dir, dir, canonical string, isView func(string) bool, keep string) (folded []string, err error) {
	uid, gid, err := sess.Owner()
	if err != nil {
		return nil, err
	}
	ents, err := sess.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ents = slices.DeleteFunc(ents, func(e fs.DirEntry) bool {
		return e.Type() != fs.ModeDir || e.Name() == canonical || !isView(e.Name())
	})
	var todo []string
	for _, e := range ents {
		src := dir + "/" + e.Name()
		inside, err := sess.ReadDir(src)
		if err != nil {
			return nil, err
		}
		if keep == "" || slices.ContainsFunc(inside, func(i fs.DirEntry) bool { return i.Name() != keep }) {
			todo = append(todo, e.Name())
		}
	}
	if len(todo) == 0 {
		return nil, nil
	}
	// The canonical folder must be a real folder (not a link out of the session) before anything moves in.
	dst := dir + "/" + canonical
	if err := sess.MkdirAll(dst, 0o755, uid, gid); err != nil {
		return nil, err
	}
	for _, name := range todo {
		src := dir + "/" + name
		if err := moveInto(sess, src, dst, keep, uid, gid); err != nil {
			return folded, err
		}
		if keep != "" || sess.Remove(src) == nil {
			folded = append(folded, name)
		}
	}
	return folded, nil
}

// moveInto moves the entries of src into dst (both beneath sess), merging folders and keeping both of two files
// of one name. An entry of src named skip stays where it is.
func moveInto(sess *Dir, src, dst, skip string, uid, gid int) error {
	if err := sess.MkdirAll(dst, 0o755, uid, gid); err != nil {
		return err
	}
	ents, err := sess.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if skip != "" && e.Name() == skip {
			continue
		}
		from, to := src+"/"+e.Name(), dst+"/"+e.Name()
		st, err := sess.Lstat(to)
		switch {
		case errors.Is(err, syscall.ENOENT):
			if err := sess.Rename(from, to, unix.RENAME_NOREPLACE); err != nil {
				return err
			}
		case err != nil:
			return err
		case e.Type() == fs.ModeDir && st.Mode&syscall.S_IFMT == syscall.S_IFDIR:
			if err := moveInto(sess, from, to, "", uid, gid); err != nil {
				return err
			}
			_ = sess.Remove(from)
		default:
			if err := renameAside(sess, from, to+".sessionfs-conflict-fold"); err != nil {
				return err
			}
		}
	}
	return nil
}

// renameAside renames from to to, or to to-2, to-3, ... when taken: nothing is ever replaced.
func renameAside(sess *Dir, from, to string) error {
	for i := 1; ; i++ {
		dst := to
		if i > 1 {
			dst = fmt.Sprintf("%s-%d", to, i)
		}
		err := sess.Rename(from, dst, unix.RENAME_NOREPLACE)
		if !errors.Is(err, syscall.EEXIST) || i >= 1000 {
			return err
		}
	}
}
