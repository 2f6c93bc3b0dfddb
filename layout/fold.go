package layout

import (
	"errors"
	"io/fs"
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
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	sessions, err := OpenDir(s.SessionsDir())
	if err != nil {
		return nil, err
	}
	defer sessions.Close()
	d, err := sessions.Sub(id)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return FoldProjectsIn(d)
}

// FoldProjectsIn folds the session open as sess. Everything is resolved beneath sess and no symlink is followed:
// a session that made its canonical folder (or any folder on the way) a link out of itself gets an error, and
// nothing is moved.
func FoldProjectsIn(sess *Dir) (folded []string, err error) {
	canonical := ProjectsDir + "/" + CanonicalProject
	ents, err := sess.ReadDir(ProjectsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if e.Type() != fs.ModeDir || e.Name() == CanonicalProject {
			continue
		}
		src := ProjectsDir + "/" + e.Name()
		if err := moveInto(sess, src, canonical); err != nil {
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
func moveInto(sess *Dir, src, dst string) error {
	if err := sess.MkdirAll(dst, 0o755, -1, -1); err != nil {
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
			if err := moveInto(sess, from, to); err != nil {
				return err
			}
			_ = sess.Remove(from)
		default:
			if err := sess.Rename(from, to+".sessionfs-conflict-fold", unix.RENAME_NOREPLACE); err != nil {
				return err
			}
		}
	}
	return nil
}
