package layout

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// MaxWalkDepth bounds Walk: a session can nest folders deeper than any tool needs, and each level holds a
// descriptor.
const MaxWalkDepth = 512

// Walk calls fn for every entry beneath d (not d itself), a folder before what it holds, with its lstat. Each
// folder is opened from its parent's descriptor with no symlink followed, so a name swapped for a symlink while
// the walk runs is never entered: the walk stays beneath d whatever the session does. fn returning SkipDir for a
// folder skips its contents; any other error stops the walk. Folders deeper than MaxWalkDepth are an error.
func (d *Dir) Walk(fn func(rel string, st *unix.Stat_t) error) error {
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: d.name, Err: err}
	}
	return walkFd(fd, "", 0, fn)
}

// SkipDir, returned by a Walk function for a folder, skips what it holds.
var SkipDir = fmt.Errorf("skip this folder")

// walkFd walks the folder open as fd (whose path beneath the root is prefix) and closes fd.
func walkFd(fd int, prefix string, depth int, fn func(rel string, st *unix.Stat_t) error) error {
	f := os.NewFile(uintptr(fd), prefix)
	defer f.Close()
	if depth > MaxWalkDepth {
		return &os.PathError{Op: "walk", Path: prefix, Err: fmt.Errorf("folders nested more than %d deep", MaxWalkDepth)}
	}
	names, err := f.Readdirnames(-1)
	if err != nil {
		return &os.PathError{Op: "readdir", Path: prefix, Err: err}
	}
	for _, name := range names {
		rel := name
		if prefix != "" {
			rel = prefix + "/" + name
		}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT { // removed meanwhile
				continue
			}
			return &os.PathError{Op: "lstat", Path: rel, Err: err}
		}
		err := fn(rel, &st)
		if err == SkipDir {
			continue
		}
		if err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err == unix.ENOENT || err == unix.ELOOP || err == unix.ENOTDIR {
			continue // removed, or swapped for something that is not a folder, since the lstat
		}
		if err != nil {
			return &os.PathError{Op: "open", Path: rel, Err: err}
		}
		if err := walkFd(sub, rel, depth+1, fn); err != nil {
			return err
		}
	}
	return nil
}
