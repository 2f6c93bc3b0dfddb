package layout

import (
	"bytes"
	"encoding/binary"
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
// folder skips its contents; any other error stops the walk. Folders deeper than MaxWalkDepth are an error. A
// folder is read a listing at a time, so what is added to it while the walk runs may be visited too: a caller
// that must finish against a writer bounds what it counts.
func (d *Dir) Walk(fn func(rel string, st *unix.Stat_t) error) error {
	return d.walk(func(dirfd int, rel, name string, _ uint8) (bool, error) {
		var st unix.Stat_t
		if gone, err := lstatAt(dirfd, name, rel, &st); gone || err != nil {
			return false, err
		}
		if err := fn(rel, &st); err != nil {
			return false, err
		}
		return st.Mode&unix.S_IFMT == unix.S_IFDIR, nil
	})
}

// WalkNames is Walk for a reader that needs only names and whether each is a folder: fn gets each entry's type
// as the folder's listing gives it (unix.DT_DIR, DT_REG, DT_LNK, ...), and no entry is stat-ed (but on a
// filesystem whose listings do not say, DT_UNKNOWN, which is asked). A walk for projects' settings before every
// run thus costs a folder one open and one listing, not a system call for each of its files. Folders are entered
// as Walk enters them: from their parent's descriptor, never through a link.
func (d *Dir) WalkNames(fn func(rel string, typ uint8) error) error {
	return d.walk(func(dirfd int, rel, name string, typ uint8) (bool, error) {
		if typ == unix.DT_UNKNOWN {
			var st unix.Stat_t
			if gone, err := lstatAt(dirfd, name, rel, &st); gone || err != nil {
				return false, err
			}
			typ = direntType(st.Mode)
		}
		if err := fn(rel, typ); err != nil {
			return false, err
		}
		return typ == unix.DT_DIR, nil
	})
}

// lstatAt is the lstat of name in the folder open as dirfd (at rel beneath the walk's root); gone when it was
// removed since it was listed, which a walk passes over.
func lstatAt(dirfd int, name, rel string, st *unix.Stat_t) (gone bool, err error) {
	err = unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW)
	if err == unix.ENOENT {
		return true, nil
	}
	if err != nil {
		return false, &os.PathError{Op: "lstat", Path: rel, Err: err}
	}
	return false, nil
}

// SkipDir, returned by a Walk function for a folder, skips what it holds.
var SkipDir = fmt.Errorf("skip this folder")

// visitor is given each entry of a walk, in the folder open as dirfd; it says whether to enter it, a folder (an
// error: stop, but SkipDir: go on without entering).
type visitor func(dirfd int, rel, name string, typ uint8) (enter bool, err error)

// walk is Walk's and WalkNames' one walk: each folder read with getdents into one buffer the walk's levels share
// (a level copies a listing's entries out before it goes down), not through an os.File, which would try to
// register the descriptor with the poller and hold every name of a folder at once.
func (d *Dir) walk(visit visitor) error {
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: d.name, Err: err}
	}
	bufp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bufp)
	return walkFd(fd, "", 0, *bufp, visit)
}

// dirent is one entry of a listing, copied out of the getdents buffer.
type dirent struct {
	name string
	typ  uint8
}

// walkFd walks the folder open as fd (whose path beneath the root is prefix) and closes fd.
func walkFd(fd int, prefix string, depth int, buf []byte, visit visitor) error {
	defer unix.Close(fd)
	if depth > MaxWalkDepth {
		return &os.PathError{Op: "walk", Path: prefix, Err: fmt.Errorf("folders nested more than %d deep", MaxWalkDepth)}
	}
	var ents []dirent
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "readdir", Path: prefix, Err: err}
		}
		if n <= 0 {
			return nil
		}
		if ents, err = appendDirents(ents[:0], buf[:n]); err != nil {
			return &os.PathError{Op: "readdir", Path: prefix, Err: err}
		}
		for _, e := range ents {
			rel := e.name
			if prefix != "" {
				rel = prefix + "/" + e.name
			}
			enter, err := visit(fd, rel, e.name, e.typ)
			if err == SkipDir || err == nil && !enter {
				continue
			}
			if err != nil {
				return err
			}
			sub, err := unix.Openat(fd, e.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
			if err == unix.ENOENT || err == unix.ELOOP || err == unix.ENOTDIR {
				continue // removed, or swapped for something that is not a folder, since it was listed
			}
			if err != nil {
				return &os.PathError{Op: "open", Path: rel, Err: err}
			}
			if err := walkFd(sub, rel, depth+1, buf, visit); err != nil {
				return err
			}
		}
	}
}

// listingTypes is false only in tests, to walk as on a filesystem whose listings give no types (DT_UNKNOWN).
var listingTypes = true

// appendDirents appends the entries of the linux_dirent64 records in b (one getdents' worth), but "." and "..".
func appendDirents(ents []dirent, b []byte) ([]dirent, error) {
	for len(b) > 0 {
		name, typ, rest, ok := nextDirent(b)
		if !ok {
			return ents, unix.EIO
		}
		b = rest
		if dots(name) {
			continue
		}
		if !listingTypes {
			typ = unix.DT_UNKNOWN
		}
		ents = append(ents, dirent{name: string(name), typ: typ})
	}
	return ents, nil
}

// nextDirent decodes the linux_dirent64 record at b's start (ino, off, reclen, type, name): its name, its type,
// and what follows it; ok is false for a record that does not fit.
func nextDirent(b []byte) (name []byte, typ uint8, rest []byte, ok bool) {
	if len(b) < direntNameOff {
		return nil, 0, nil, false
	}
	reclen := int(binary.NativeEndian.Uint16(b[16:18])) // as the kernel wrote it
	if reclen < direntNameOff || reclen > len(b) {
		return nil, 0, nil, false
	}
	name = b[direntNameOff:reclen]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	return name, b[18], b[reclen:], true
}

// dots reports whether a listed name is "." or ".." (or empty): no entry of the folder.
func dots(name []byte) bool {
	return len(name) == 0 || name[0] == '.' && (len(name) == 1 || len(name) == 2 && name[1] == '.')
}

// direntType is the listing's type of a file of mode m: the kernel's IFTODT, DT_DIR for S_IFDIR and so on.
func direntType(m uint32) uint8 { return uint8(m & unix.S_IFMT >> 12) }
