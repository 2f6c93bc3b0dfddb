package layout

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// CopyProfile materialises a .claude template (CLAUDE.md, settings.json, .mcp.json, skills/, commands/, hooks/,
// agents/, ...) into dst, keeping modes. Symlinks in the template are copied as links, never followed, so a profile
// cannot pull files from outside itself into a session.
func CopyProfile(src, dst string) error {
	st, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("profile %s: not a folder", src)
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			return copyFile(p, target, info.Mode().Perm())
		}
		return nil // sockets, devices: not part of a profile
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
