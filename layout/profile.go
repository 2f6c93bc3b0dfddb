package layout

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// CopyProfile materialises a .claude template (CLAUDE.md, settings.json, .mcp.json, skills/, commands/, hooks/,
// agents/, ...) into the folder dst (made if need be), keeping modes. A user's state found in the template
// (projects/, .credentials.json, history.jsonl, todos/, ...: profileState) is not copied. Symlinks in the template are copied as
// links, never followed, so a profile cannot pull files from outside itself into a session. New sessions use
// CopyProfileInto, which writes beneath an open folder.
func CopyProfile(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	d, err := OpenDir(dst)
	if err != nil {
		return err
	}
	defer d.Close()
	return CopyProfileInto(src, d, -1, -1)
}

// CopyProfileInto is CopyProfile into the open folder dst. Both sides are resolved beneath their folders with no
// symlink followed (a template swapped for links while copied still cannot leak a file from outside it); only
// folders, regular files and symlinks are copied. What is made gets uid/gid when they are >= 0 and we are root.
func CopyProfileInto(src string, dst *Dir, uid, gid int) error {
	st, err := os.Stat(src)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("profile %s: %w", src, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("profile %s: not a folder", src)
	}
	sd, err := OpenDir(src)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	defer sd.Close()
	return copyTree(sd, dst, "", uid, gid)
}

// profileState are the names at the top of a Claude Code config folder that are a user's state, not a
// template: conversations, credentials, history. A profile made by copying ~/.claude must not hand them to
// every new session.
var profileState = map[string]bool{
	"projects": true, ".credentials.json": true, "history.jsonl": true, "todos": true, "shell-snapshots": true,
	"statsig": true, "session-env": true, "file-history": true, "debug": true, ".claude.json": true,
}

func copyTree(src, dst *Dir, rel string, uid, gid int) error {
	ents, err := src.ReadDir(rel)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if rel == "" && profileState[e.Name()] {
			continue
		}
		p := filepath.Join(rel, e.Name())
		st, err := src.Lstat(p)
		if err != nil {
			return err
		}
		perm := uint32(st.Mode & 0o777) // no setuid, setgid or sticky bit from a template
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			if err := dst.MkdirAll(p, perm|0o700, uid, gid); err != nil {
				return err
			}
			if err := copyTree(src, dst, p, uid, gid); err != nil {
				return err
			}
		case unix.S_IFLNK:
			target, err := src.Readlink(p)
			if err != nil {
				return err
			}
			if err := dst.Symlink(target, p, uid, gid); err != nil {
				return err
			}
		case unix.S_IFREG:
			if err := copyRegular(src, dst, p, perm, uid, gid); err != nil {
				return err
			}
		}
		// sockets, devices, FIFOs: not part of a profile
	}
	return nil
}

func copyRegular(src, dst *Dir, rel string, perm uint32, uid, gid int) error {
	ifd, err := src.OpenAt(rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: rel, Err: err}
	}
	in := os.NewFile(uintptr(ifd), rel)
	defer in.Close()
	if fi, err := in.Stat(); err != nil || !fi.Mode().IsRegular() {
		return &os.PathError{Op: "copy", Path: rel, Err: fmt.Errorf("not a regular file any more")}
	}
	ofd, err := dst.OpenAt(rel, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, perm)
	if err != nil {
		return &os.PathError{Op: "create", Path: rel, Err: err}
	}
	out := os.NewFile(uintptr(ofd), rel)
	_, err = io.Copy(out, in)
	if err == nil {
		err = unix.Fchmod(ofd, perm) // the template's mode, whatever the umask
	}
	if err == nil && (uid >= 0 || gid >= 0) && os.Geteuid() == 0 {
		err = out.Chown(uid, gid)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
