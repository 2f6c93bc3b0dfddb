package layout

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// FoldProjects moves what Claude Code filed under other folders of a session's .claude/projects (a session used
// without the mount gets one folder per cwd) into the canonical folder, so every view of it shows everything. A
// name already taken in the canonical folder keeps both: the incoming one gets a .sessionfs-conflict-fold
// suffix. It returns the names of the folders it emptied, which were aliases in use.
func FoldProjects(sessionDir string) (folded []string, err error) {
	p := Derive(sessionDir)
	ents, err := os.ReadDir(p.Projects)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if !e.IsDir() || e.Name() == CanonicalProject {
			continue
		}
		src := filepath.Join(p.Projects, e.Name())
		if err := moveInto(src, p.Canonical); err != nil {
			return folded, err
		}
		if os.Remove(src) == nil {
			folded = append(folded, e.Name())
		}
	}
	return folded, nil
}

// moveInto moves the entries of src into dst, merging folders and keeping both of two files of one name.
func moveInto(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		from, to := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		st, err := os.Lstat(to)
		switch {
		case err != nil:
			if err := os.Rename(from, to); err != nil {
				return err
			}
		case e.IsDir() && st.IsDir():
			if err := moveInto(from, to); err != nil {
				return err
			}
			_ = os.Remove(from)
		default:
			if err := os.Rename(from, to+".sessionfs-conflict-fold"); err != nil {
				return err
			}
		}
	}
	return nil
}
