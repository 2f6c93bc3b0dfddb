package layout

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Everything inside a session is written by its (untrusted) processes: any name may be a symlink, a FIFO or a
// folder swapped for one between two calls. Dir resolves names beneath an open folder with openat2, refusing
// every symlink and magic link on the way (ELOOP) and any escape (EXDEV), so a name can never lead outside the
// folder, whatever races the session runs. Names are relative, so a path is never longer than what lies beneath
// the folder; one longer than PATH_MAX is resolved in pieces.

// Dir is an open folder through which names are resolved safely.
type Dir struct {
	fd   int
	name string // for messages only
}

// resolveFlags: never follow a symlink (the daemon does not act on a link a session planted), never leave the
// folder.
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// OpenDir opens a trusted folder (the store, given by the administrator) as the base of safe resolution. path
// itself may be reached through symlinks; what lies beneath it may not.
func OpenDir(path string) (*Dir, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return &Dir{fd: fd, name: path}, nil
}

// Fd is the folder's descriptor (O_PATH), for *at calls. It stays owned by d.
func (d *Dir) Fd() int { return d.fd }

// Name is the path the folder was opened by, for messages.
func (d *Dir) Name() string { return d.name }

// Close releases the folder.
func (d *Dir) Close() error {
	if d == nil || d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}

// OpenAt opens rel beneath the folder with open(2) flags (O_CLOEXEC is added). Every component, the last one
// too, must not be a symlink: ELOOP if one is.
func (d *Dir) OpenAt(rel string, flags int, mode uint32) (int, error) {
	return OpenBeneath(d.fd, rel, flags, mode)
}

// Sub opens the folder rel beneath d.
func (d *Dir) Sub(rel string) (*Dir, error) {
	fd, err := d.OpenAt(rel, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: d.name + "/" + rel, Err: err}
	}
	return &Dir{fd: fd, name: d.name + "/" + rel}, nil
}

// Parent opens the folder that holds rel (O_PATH) and returns it with rel's last name, for the *at calls that
// act on a name without following it (unlinkat, renameat2, fchownat with AT_SYMLINK_NOFOLLOW, ...). The
// caller closes fd.
func (d *Dir) Parent(rel string) (fd int, name string, err error) {
	return ParentBeneath(d.fd, rel)
}

// OpenBeneath is OpenAt on a raw folder descriptor.
func OpenBeneath(dirfd int, rel string, flags int, mode uint32) (int, error) {
	return openBeneath(dirfd, rel, flags, mode, resolveFlags)
}

// OpenBeneathNoMounts is OpenBeneath that also refuses to cross a mount (EXDEV): for a place something is to be
// mounted on, or a name whose answer must come from the folder's own filesystem.
func OpenBeneathNoMounts(dirfd int, rel string, flags int) (int, error) {
	return openBeneath(dirfd, rel, flags, 0, resolveFlags|unix.RESOLVE_NO_XDEV)
}

func openBeneath(dirfd int, rel string, flags int, mode uint32, resolve uint64) (int, error) {
	rel = strings.Trim(rel, "/")
	if rel == "" {
		rel = "."
	}
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: resolve}
	if flags&(unix.O_CREAT|unix.O_TMPFILE) != 0 {
		how.Mode = uint64(mode & 0o7777) // openat2 refuses file-type bits
	}
	if len(rel) < unix.PathMax {
		return openat2(dirfd, rel, &how)
	}
	// Longer than the kernel takes in one call: walk it in pieces, each one beneath the last.
	cur, own := dirfd, false
	defer func() {
		if own {
			unix.Close(cur)
		}
	}()
	for len(rel) >= unix.PathMax {
		cut := strings.LastIndexByte(rel[:unix.PathMax-1], '/')
		if cut <= 0 {
			return -1, syscall.ENAMETOOLONG
		}
		next, err := openat2(cur, rel[:cut], &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: resolve})
		if err != nil {
			return -1, err
		}
		if own {
			unix.Close(cur)
		}
		cur, own, rel = next, true, rel[cut+1:]
	}
	return openat2(cur, rel, &how)
}

// ParentBeneath is Parent on a raw folder descriptor.
func ParentBeneath(dirfd int, rel string) (fd int, name string, err error) {
	rel = strings.Trim(rel, "/")
	dir, name := ".", rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		dir, name = rel[:i], rel[i+1:]
	}
	if name == "" || name == "." || name == ".." {
		return -1, "", syscall.EINVAL
	}
	fd, err = OpenBeneath(dirfd, dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	return fd, name, err
}

func openat2(dirfd int, rel string, how *unix.OpenHow) (int, error) {
	for {
		fd, err := unix.Openat2(dirfd, rel, how)
		if err == unix.EINTR || err == unix.EAGAIN && how.Flags&unix.O_NONBLOCK == 0 {
			continue // EAGAIN: a rename raced the lookup (RESOLVE_BENEATH rechecks); try again
		}
		return fd, err
	}
}

// MaxMetaSize bounds what is read of a file a session controls (session.json, settings): a hostile session
// cannot make us read gigabytes.
const MaxMetaSize = 4 << 20

// ReadRegular reads rel beneath d if it is a regular file no larger than limit. It never blocks on a FIFO or a
// device and never opens one for reading: the name is first opened O_PATH (which opens nothing), checked with
// fstat, and only a regular file is then reopened through its descriptor, so a rename racing the check cannot
// swap in something else. It never follows a symlink: a symlink (ELOOP), a FIFO, a device, a socket, a folder
// or a file over limit is ErrDamaged. A missing file is fs.ErrNotExist.
func (d *Dir) ReadRegular(rel string, limit int64) ([]byte, error) {
	if limit < 0 {
		limit = 1<<63 - 1
	}
	fd, size, err := d.openRegular(rel, limit)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return readRegular(fd, rel, size, limit)
}

// OpenRegular opens rel beneath d for reading as ReadRegular does: only a regular file of at most limit bytes
// (limit < 0: any size), never through a symlink, never opening a FIFO or a device. The caller closes the file.
func (d *Dir) OpenRegular(rel string, limit int64) (*os.File, error) {
	if limit < 0 {
		limit = 1<<63 - 1
	}
	fd, _, err := d.openRegular(rel, limit)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), rel), nil
}

// openRegular is OpenRegular's descriptor, and the size fstat gave.
func (d *Dir) openRegular(rel string, limit int64) (fd int, size int64, err error) {
	pfd, err := d.OpenAt(rel, unix.O_PATH, 0)
	if err != nil {
		if err == unix.ELOOP {
			err = fmt.Errorf("%w: a symlink: %w", ErrDamaged, err)
		}
		return -1, 0, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return -1, 0, &os.PathError{Op: "stat", Path: rel, Err: err}
	}
	if err := checkRegular(&st, rel, limit); err != nil {
		return -1, 0, err
	}
	fd, err = reopen(pfd, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err == unix.ENOENT {
		// No /proc (a bare chroot): open the name again, still never following a link nor blocking, and check
		// it is the inode we looked at.
		var st2 unix.Stat_t
		if fd, err = d.OpenAt(rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0); err == nil {
			if err = unix.Fstat(fd, &st2); err == nil && (st2.Dev != st.Dev || st2.Ino != st.Ino) {
				err = fmt.Errorf("%w: replaced while being read", ErrDamaged)
			}
			if err != nil {
				unix.Close(fd)
			}
		}
	}
	if err != nil {
		return -1, 0, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	return fd, st.Size, nil
}

// reopen opens the file an O_PATH descriptor refers to, the same inode whatever happened to its name since,
// through /proc's magic link (the one link we do follow: it is the kernel's, not the session's).
func reopen(pathfd int, flags int) (int, error) {
	for {
		fd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", pathfd), flags|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		return fd, err
	}
}

func checkRegular(st *unix.Stat_t, rel string, limit int64) error {
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return &os.PathError{Op: "read", Path: rel, Err: fmt.Errorf("%w: not a regular file (mode %#o)", ErrDamaged, st.Mode&unix.S_IFMT)}
	}
	if st.Size > limit {
		return &os.PathError{Op: "read", Path: rel, Err: fmt.Errorf("%w: %d bytes, more than the %d allowed", ErrDamaged, st.Size, limit)}
	}
	return nil
}

// readRegular reads the regular file open as fd, of size bytes when opened, to its end: into one buffer of that
// size and a byte more (the end is seen without growing it), with its own reads. An os.File would fstat it again and
// try the poller (3 system calls of a session.json's 8, for each of 10,000 sessions a first ls reads).
func readRegular(fd int, rel string, size, limit int64) ([]byte, error) {
	b := make([]byte, 0, size+1) // size <= limit < 1<<63-1
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, min(max(len(b), 512), int(min(limit+1-int64(len(b)), 1<<30))))
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: rel, Err: err}
		}
		if n == 0 {
			return b, nil
		}
		if b = b[:len(b)+n]; int64(len(b)) > limit {
			return nil, &os.PathError{Op: "read", Path: rel, Err: fmt.Errorf("%w: grew past %d bytes", ErrDamaged, limit)}
		}
	}
}

// WriteAtomic replaces rel beneath d with data: a temporary file beside it, synced, renamed over it. Whatever
// rel was (a symlink, a FIFO), it is replaced, never followed. uid/gid >= 0 give the new file an owner.
func (d *Dir) WriteAtomic(rel string, data []byte, perm uint32, uid, gid int) error {
	return d.WriteAtomicFrom(rel, bytes.NewReader(data), perm, uid, gid, time.Time{})
}

// WriteAtomicFrom is WriteAtomic with the content read from r, and the modification time set to mtime unless it
// is zero.
func (d *Dir) WriteAtomicFrom(rel string, r io.Reader, perm uint32, uid, gid int, mtime time.Time) error {
	pfd, name, err := d.Parent(rel)
	if err != nil {
		return &os.PathError{Op: "write", Path: rel, Err: err}
	}
	defer unix.Close(pfd)
	var tmp string
	var fd int
	for i := 0; ; i++ {
		tmp = fmt.Sprintf(".%s.tmp-%d-%d", name, os.Getpid(), i)
		fd, err = unix.Openat(pfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		if err != unix.EEXIST || i > 100 {
			break
		}
	}
	if err != nil {
		return &os.PathError{Op: "write", Path: rel, Err: err}
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = io.Copy(f, r)
	if err == nil {
		err = f.Chmod(os.FileMode(perm))
	}
	if err == nil && (uid >= 0 || gid >= 0) && os.Geteuid() == 0 {
		err = f.Chown(uid, gid)
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil && !mtime.IsZero() {
		ts := unix.NsecToTimespec(mtime.UnixNano())
		err = unix.UtimesNanoAt(pfd, tmp, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(pfd, tmp, pfd, name)
	}
	if err != nil {
		_ = unix.Unlinkat(pfd, tmp, 0)
		var pe *os.PathError
		if !errors.As(err, &pe) {
			err = &os.PathError{Op: "write", Path: rel, Err: err}
		}
	}
	return err
}

// Owner is the uid and gid of the folder itself.
func (d *Dir) Owner() (uid, gid int, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return -1, -1, err
	}
	return int(st.Uid), int(st.Gid), nil
}

// MkdirAll makes the folder rel beneath d and its missing parents, none of them through a symlink. New folders
// get perm and, when uid/gid >= 0 and we are root, that owner (the session's, not the daemon's).
func (d *Dir) MkdirAll(rel string, perm uint32, uid, gid int) error {
	rel = strings.Trim(rel, "/")
	if rel == "" {
		return nil
	}
	cur := 0
	for cur <= len(rel) {
		next := strings.IndexByte(rel[cur:], '/')
		end := len(rel)
		if next >= 0 {
			end = cur + next
		}
		prefix := rel[:end]
		pfd, name, err := d.Parent(prefix)
		if err != nil {
			return &os.PathError{Op: "mkdir", Path: prefix, Err: err}
		}
		err = unix.Mkdirat(pfd, name, perm)
		created := err == nil
		if err == nil || err == unix.EEXIST {
			// Whatever is there now must be a folder, not a link to one (it may have been swapped since mkdir).
			var fd int
			if fd, err = unix.Openat(pfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
				if created && (uid >= 0 || gid >= 0) && os.Geteuid() == 0 {
					err = unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH)
				}
				unix.Close(fd)
			}
		}
		unix.Close(pfd)
		if err != nil {
			return &os.PathError{Op: "mkdir", Path: prefix, Err: err}
		}
		cur = end + 1
	}
	return nil
}

// ReadDir lists the folder rel beneath d (not through a symlink).
func (d *Dir) ReadDir(rel string) ([]os.DirEntry, error) {
	fd, err := d.OpenAt(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	ents, err := f.ReadDir(-1)
	for i, e := range ents {
		ents[i] = beneathEntry{DirEntry: e, d: d, rel: path.Join(rel, e.Name())}
	}
	return ents, err
}

// Folders names the folders in d itself (not links to one), in the order the filesystem gives them: ReadDir
// without an os.DirEntry and a path for each entry, which at 10,000 sessions took 16 ms of find's 70.
func (d *Dir) Folders() ([]string, error) {
	names, _, err := d.folders(0)
	return names, err
}

// FoldersUpTo is Folders of a folder a session writes, read no further than its first max entries of any kind:
// all is false when it holds more (the caller then does without the list), so a session's million names cost a
// reader one buffer, not a million strings.
func (d *Dir) FoldersUpTo(max int) (names []string, all bool, err error) {
	return d.folders(max)
}

// folders is Folders up to max entries (0: all of them).
func (d *Dir) folders(max int) (names []string, all bool, err error) {
	fd, err := d.OpenAt(".", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, false, &os.PathError{Op: "open", Path: ".", Err: err}
	}
	defer unix.Close(fd)
	seen := 0
	bufp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bufp)
	buf := *bufp
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, false, &os.PathError{Op: "readdirent", Path: ".", Err: err}
		}
		if n <= 0 {
			return names, true, nil
		}
		for b := buf[:n]; len(b) > 0; {
			name, typ, rest, ok := nextDirent(b)
			if !ok {
				return nil, false, &os.PathError{Op: "readdirent", Path: ".", Err: unix.EIO}
			}
			b = rest
			if dots(name) {
				continue
			}
			if seen++; max > 0 && seen > max {
				return names, false, nil
			}
			if typ == unix.DT_UNKNOWN { // a filesystem that does not say: ask
				var st unix.Stat_t
				if unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
					typ = unix.DT_DIR
				}
			}
			if typ == unix.DT_DIR {
				names = append(names, string(name))
			}
		}
	}
}

// direntNameOff is where a linux_dirent64's name begins.
const direntNameOff = 19

// beneathEntry is an entry of Dir.ReadDir whose Info looks its name up beneath the Dir too: an os.File's
// entries lstat a path string (the folder's name joined to the entry's, taken from the process's working folder),
// which would describe a host file of that name.
type beneathEntry struct {
	os.DirEntry
	d   *Dir
	rel string
}

func (e beneathEntry) Info() (fs.FileInfo, error) {
	st, err := e.d.Lstat(e.rel)
	if err != nil {
		return nil, err
	}
	return statInfo{name: e.Name(), st: st}, nil
}

// InfoOf is the fs.FileInfo of st, a stat made beneath a descriptor, for the entry name.
func InfoOf(name string, st unix.Stat_t) fs.FileInfo { return statInfo{name: name, st: st} }

// statInfo is an fs.FileInfo of a stat made beneath a descriptor.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (i statInfo) Name() string       { return i.name }
func (i statInfo) Size() int64        { return i.st.Size }
func (i statInfo) ModTime() time.Time { return time.Unix(i.st.Mtim.Unix()) }
func (i statInfo) IsDir() bool        { return i.st.Mode&unix.S_IFMT == unix.S_IFDIR }
func (i statInfo) Sys() any           { return &i.st }

func (i statInfo) Mode() fs.FileMode {
	m := fs.FileMode(i.st.Mode & 0o777)
	switch i.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	}
	if i.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if i.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if i.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// Lstat describes rel beneath d without following it.
func (d *Dir) Lstat(rel string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if rel != "" && rel != "." && rel != ".." && !strings.Contains(rel, "/") {
		// A name in d itself: its parent is d, so no descriptor to open (the index asks each session for every
		// agent's folder: 70,000 names for 10,000 sessions).
		if err := unix.Fstatat(d.fd, rel, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return st, &os.PathError{Op: "lstat", Path: rel, Err: err}
		}
		return st, nil
	}
	pfd, name, err := d.Parent(rel)
	if err != nil {
		if strings.Trim(rel, "/") == "" || rel == "." {
			return st, unix.Fstat(d.fd, &st)
		}
		return st, &os.PathError{Op: "lstat", Path: rel, Err: err}
	}
	defer unix.Close(pfd)
	if err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return st, &os.PathError{Op: "lstat", Path: rel, Err: err}
	}
	return st, nil
}

// Rename moves from to to, both beneath d, never through a symlink; flags are renameat2's.
func (d *Dir) Rename(from, to string, flags uint) error {
	ffd, fname, err := d.Parent(from)
	if err != nil {
		return &os.PathError{Op: "rename", Path: from, Err: err}
	}
	defer unix.Close(ffd)
	tfd, tname, err := d.Parent(to)
	if err != nil {
		return &os.PathError{Op: "rename", Path: to, Err: err}
	}
	defer unix.Close(tfd)
	if err := renameat2(ffd, fname, tfd, tname, flags); err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return nil
}

// Remove removes the file or empty folder rel beneath d.
func (d *Dir) Remove(rel string) error {
	pfd, name, err := d.Parent(rel)
	if err != nil {
		return &os.PathError{Op: "remove", Path: rel, Err: err}
	}
	defer unix.Close(pfd)
	err = unix.Unlinkat(pfd, name, 0)
	if err == unix.EISDIR {
		err = unix.Unlinkat(pfd, name, unix.AT_REMOVEDIR)
	}
	if err != nil {
		return &os.PathError{Op: "remove", Path: rel, Err: err}
	}
	return nil
}

// RenameTo moves from, beneath d, to to, beneath dst (another folder of the same filesystem), never through a
// symlink on either side; flags are renameat2's. The entry itself is moved, whatever it is (a symlink too).
func (d *Dir) RenameTo(from string, dst *Dir, to string, flags uint) error {
	ffd, fname, err := d.Parent(from)
	if err != nil {
		return &os.PathError{Op: "rename", Path: from, Err: err}
	}
	defer unix.Close(ffd)
	tfd, tname, err := dst.Parent(to)
	if err != nil {
		return &os.PathError{Op: "rename", Path: to, Err: err}
	}
	defer unix.Close(tfd)
	if err := renameat2(ffd, fname, tfd, tname, flags); err != nil {
		return &os.LinkError{Op: "rename", Old: d.name + "/" + from, New: dst.name + "/" + to, Err: err}
	}
	return nil
}

// renameat2 is renameat2(2), with RENAME_NOREPLACE made of older calls on filesystems that refuse rename flags
// (EINVAL: some shared filesystems' FUSE clients, MooseFS's among them). A file or link is hard-linked to its new
// name (which fails if the name is taken) and then unlinked from its old one: a crash between the two leaves
// both names, never none. A folder takes a new empty folder's place: mkdir claims the name, and a rename over an
// empty folder is atomic.
func renameat2(ffd int, fname string, tfd int, tname string, flags uint) error {
	err := unix.Renameat2(ffd, fname, tfd, tname, flags)
	if err != unix.EINVAL || flags != unix.RENAME_NOREPLACE {
		return err
	}
	return renameNoReplace(ffd, fname, tfd, tname)
}

// renameNoReplace is RENAME_NOREPLACE without rename flags.
func renameNoReplace(ffd int, fname string, tfd int, tname string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(ffd, fname, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		if err := unix.Linkat(ffd, fname, tfd, tname, 0); err != nil {
			return err
		}
		return unix.Unlinkat(ffd, fname, 0)
	}
	if err := unix.Mkdirat(tfd, tname, 0o700); err != nil {
		return err // EEXIST: the name is taken
	}
	if err := unix.Renameat(ffd, fname, tfd, tname); err != nil {
		_ = unix.Unlinkat(tfd, tname, unix.AT_REMOVEDIR) // only if still our empty folder
		if err == unix.ENOTEMPTY {
			err = unix.EEXIST // someone filled the name meanwhile
		}
		return err
	}
	return nil
}

// Readlink reads the symlink rel beneath d (never following it).
func (d *Dir) Readlink(rel string) (string, error) {
	pfd, name, err := d.Parent(rel)
	if err != nil {
		return "", &os.PathError{Op: "readlink", Path: rel, Err: err}
	}
	defer unix.Close(pfd)
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(pfd, name, buf)
	if err != nil {
		return "", &os.PathError{Op: "readlink", Path: rel, Err: err}
	}
	return string(buf[:n]), nil
}

// Symlink makes the symlink rel beneath d pointing to target (which is not resolved), owned by uid/gid when
// they are >= 0 and we are root.
func (d *Dir) Symlink(target, rel string, uid, gid int) error {
	pfd, name, err := d.Parent(rel)
	if err != nil {
		return &os.PathError{Op: "symlink", Path: rel, Err: err}
	}
	defer unix.Close(pfd)
	err = unix.Symlinkat(target, pfd, name)
	if err == nil && (uid >= 0 || gid >= 0) && os.Geteuid() == 0 {
		err = unix.Fchownat(pfd, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err != nil {
		return &os.PathError{Op: "symlink", Path: rel, Err: err}
	}
	return nil
}

// SameFolder reports whether a and b are one folder.
func SameFolder(a, b *Dir) bool {
	var sa, sb unix.Stat_t
	return unix.Fstat(a.fd, &sa) == nil && unix.Fstat(b.fd, &sb) == nil && sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// Born returns when rel, a regular file beneath d reached without following a symlink, was made: its birth
// time, else (a filesystem that keeps none) its change time.
func (d *Dir) Born(rel string) (time.Time, bool) {
	pfd, name, err := d.Parent(rel)
	if err != nil {
		return time.Time{}, false
	}
	defer unix.Close(pfd)
	var st unix.Statx_t
	if err := unix.Statx(pfd, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE|unix.STATX_BTIME|unix.STATX_CTIME, &st); err != nil {
		return time.Time{}, false
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return time.Time{}, false
	}
	t := st.Ctime
	if st.Mask&unix.STATX_BTIME != 0 {
		t = st.Btime
	}
	return time.Unix(t.Sec, int64(t.Nsec)), true
}
