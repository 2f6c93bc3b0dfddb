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
	canonical := ProjectsDir + "/" + CanonicalProject
	uid, gid, err := sess.Owner()
	if err != nil {
		return nil, err
	}
	ents, err := sess.ReadDir(ProjectsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ents = slices.DeleteFunc(ents, func(e fs.DirEntry) bool { return e.Type() != fs.ModeDir || e.Name() == CanonicalProject })
	if len(ents) == 0 {
		return nil, nil
	}
	// The canonical folder must be a real folder (not a link out of the session) before anything moves in.
	if err := sess.MkdirAll(canonical, 0o755, uid, gid); err != nil {
		return nil, err
	}
	for _, e := range ents {
		src := ProjectsDir + "/" + e.Name()
		if err := moveInto(sess, src, canonical, uid, gid); err != nil {
			return folded, err
		}
		if sess.Remove(src) == nil {
			folded = append(folded, e.Name())
		}
	}
	return folded, nil
}

// moveInto moves the entries of src into dst (both beneath sess), merging folders and keeping both of two files
// of one name.
func moveInto(sess *Dir, src, dst string, uid, gid int) error {
	if err := sess.MkdirAll(dst, 0o755, uid, gid); err != nil {
		return err
	}
	ents, err := sess.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
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
			if err := moveInto(sess, from, to, uid, gid); err != nil {
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
