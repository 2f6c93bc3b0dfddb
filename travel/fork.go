package travel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
)

// ForkOptions shape a fork.
type ForkOptions struct {
	// Progress, when set, is called as entries are copied, with what is done and the total to do.
	Progress func(done, total Counts)
	Now      time.Time // the fork's creation time; zero means now
}

// ForkReport says what a fork made.
type ForkReport struct {
	ID   string `json:"id"`
	From string `json:"forked_from"`
	Counts
	Cloned  int      `json:"cloned"` // files sharing their blocks with the origin's (reflinks)
	Copied  int      `json:"copied"` // files copied byte for byte, where the filesystem cannot clone
	Skipped []string `json:"skipped"`
}

// Fork makes session newID a copy of session id as it is now: the same files, folders, links, modes, times
// and user.* xattrs, owned as in the origin. Files are cloned (FICLONE: reflinks on btrfs, XFS, bcachefs...)
// where the store's filesystem can, copied elsewhere. A transcript being written is copied up to its last whole
// line. The fork's session.json records forked_from; the origin keeps the conversations both hold (claude.Holders).
// Like Import, it is all or nothing: assembled in a hidden folder, renamed into place when whole.
// Cancelling ctx stops it between two entries, leaving nothing behind.
func Fork(ctx context.Context, store *layout.Store, id, newID string, opts ForkOptions) (rep *ForkReport, err error) {
	if err := layout.ValidateID(newID); err != nil {
		return nil, err
	}
	meta, err := store.Get(id) // a damaged origin is refused, not half forked
	if err != nil {
		return nil, err
	}
	if store.Exists(newID) {
		return nil, &layout.Error{Op: "fork", ID: newID, Kind: layout.ErrExists}
	}
	sess, err := store.OpenSession(id)
	if err != nil {
		return nil, err
	}
	defer sess.Close()

	var all found
	err = sess.Walk(func(rel string, st *unix.Stat_t) error {
		if rel == layout.MetaFile {
			return nil // written anew below
		}
		all.add(rel, st)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fork %s: %w", id, err)
	}
	all.sortFrom(0)

	stage, dst, remove, err := newStage(store, forkStage, newID)
	if err != nil {
		return nil, fmt.Errorf("fork %s: %w", id, err)
	}
	defer dst.Close()
	defer func() {
		if err != nil {
			remove()
		}
	}()

	rep = &ForkReport{ID: newID, From: id, Skipped: []string{}}
	f := &forker{src: sess, dst: dst, rep: rep, clone: true, links: map[[2]uint64]string{}}
	copyNamed := func(rel string, st *unix.Stat_t) error {
		if err := f.add(rel, st); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		return nil
	}
	if cancelled, err := all.copyEach(ctx, copyNamed, &rep.Counts, opts.Progress); err != nil {
		if cancelled {
			return nil, err
		}
		return nil, fmt.Errorf("fork %s: %w", id, err)
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	meta.ID, meta.ForkedFrom, meta.Created, meta.Runs = newID, id, now.UTC(), nil
	b, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return nil, err
	}
	uid, gid := owner(sess)
	if err := dst.WriteAtomic(layout.MetaFile, append(b, '\n'), 0o644, uid, gid); err != nil {
		return nil, fmt.Errorf("fork %s: %w", id, err)
	}
	// The fork's folders get the origin's modes, times and owner last (deepest first): filling a folder
	// changes its time.
	for i := len(f.dirs) - 1; i >= 0; i-- {
		if err := f.finishDir(f.dirs[i]); err != nil {
			return nil, fmt.Errorf("fork %s: %w", id, err)
		}
	}
	var root unix.Stat_t
	if err := unix.Fstat(sess.Fd(), &root); err != nil {
		return nil, err
	}
	if err := f.finishDir(walked{".", root}); err != nil {
		return nil, fmt.Errorf("fork %s: %w", id, err)
	}
	fd, err := dst.OpenAt(".", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	err = unix.Syncfs(fd)
	unix.Close(fd)
	if err != nil {
		return nil, fmt.Errorf("fork %s: %w", id, err)
	}
	if err := store.Place(stage, newID); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, &layout.Error{Op: "fork", ID: newID, Kind: layout.ErrExists}
		}
		return nil, fmt.Errorf("fork %s: %w", id, err)
	}
	return rep, nil
}

type forker struct {
	src, dst *layout.Dir
	rep      *ForkReport
	clone    bool // false once the filesystem said it cannot
	links    map[[2]uint64]string
	dirs     []walked
}

func owner(d *layout.Dir) (uid, gid int) {
	u, g, err := d.Owner()
	if err != nil {
		return -1, -1
	}
	return u, g
}

func (f *forker) add(rel string, st *unix.Stat_t) error {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if err := f.dst.MkdirAll(rel, 0o700, -1, -1); err != nil {
			return err
		}
		f.dirs = append(f.dirs, walked{rel, *st})
		f.rep.Files++
	case unix.S_IFLNK:
		target, err := f.src.Readlink(rel)
		if err != nil {
			return f.vanished(rel, err)
		}
		// The fork holds what the origin held: a link is copied as it is, followed by neither.
		if err := f.dst.Symlink(target, rel, int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
		pfd, name, err := f.dst.Parent(rel)
		if err == nil {
			ts := []unix.Timespec{st.Atim, st.Mtim}
			_ = unix.UtimesNanoAt(pfd, name, ts, unix.AT_SYMLINK_NOFOLLOW)
			unix.Close(pfd)
		}
		f.rep.Files++
	case unix.S_IFREG:
		return f.file(rel)
	case unix.S_IFIFO:
		f.rep.Skipped = append(f.rep.Skipped, rel+": a FIFO")
	case unix.S_IFSOCK:
		f.rep.Skipped = append(f.rep.Skipped, rel+": a socket")
	default:
		f.rep.Skipped = append(f.rep.Skipped, rel+": a device")
	}
	return nil
}

func (f *forker) vanished(rel string, err error) error {
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ELOOP) || errors.Is(err, layout.ErrDamaged) || errors.Is(err, unix.ENOTDIR) {
		f.rep.Skipped = append(f.rep.Skipped, rel+": changed while being forked")
		return nil
	}
	return err
}

// file clones or copies the regular file rel, opened without following a link nor opening a FIFO.
func (f *forker) file(rel string) error {
	in, err := f.src.OpenRegular(rel, -1)
	if err != nil {
		return f.vanished(rel, err)
	}
	defer in.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(in.Fd()), &st); err != nil {
		return err
	}
	pfd, name, err := f.dst.Parent(rel)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if st.Nlink > 1 {
		key := [2]uint64{st.Dev, st.Ino}
		if first, ok := f.links[key]; ok {
			ffd, fname, err := f.dst.Parent(first)
			if err != nil {
				return err
			}
			defer unix.Close(ffd)
			f.rep.Files++
			return unix.Linkat(ffd, fname, pfd, name, 0)
		}
		f.links[key] = rel
	}
	fd, err := unix.Openat(pfd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	out := os.NewFile(uintptr(fd), rel)
	defer out.Close()
	size := st.Size
	cloned := false
	if f.clone {
		switch err := unix.IoctlFileClone(fd, int(in.Fd())); {
		case err == nil:
			cloned = true
			var now unix.Stat_t
			if err := unix.Fstat(fd, &now); err != nil {
				return err
			}
			size = now.Size // the clone is the file as it was at that instant
		case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOTTY), errors.Is(err, unix.EXDEV),
			errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM):
			f.clone = false // this filesystem cannot: copy this file and the rest
		default:
			return err
		}
	}
	if !cloned {
		// io.Copy of one file into another uses copy_file_range: in the kernel, no bytes through us.
		if size, err = io.Copy(out, io.LimitReader(in, st.Size)); err != nil {
			return err
		}
	}
	if isTranscript(rel) {
		whole, err := wholeLines(out, size)
		if err != nil {
			return err
		}
		if whole < size {
			if err := out.Truncate(whole); err != nil {
				return err
			}
		}
		size = whole
	}
	if cloned {
		f.rep.Cloned++
	} else {
		f.rep.Copied++
	}
	f.rep.Files++
	f.rep.Bytes += size
	if os.Geteuid() == 0 {
		if err := unix.Fchown(fd, int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
	}
	if err := unix.Fchmod(fd, st.Mode&0o777); err != nil {
		return err
	}
	setUserXattrs(fd, userXattrs(int(in.Fd())))
	return unix.UtimesNanoAt(fd, "", []unix.Timespec{st.Atim, st.Mtim}, unix.AT_EMPTY_PATH)
}

// finishDir gives the fork's folder rel the origin folder's mode, owner, times and user.* xattrs.
func (f *forker) finishDir(e walked) error {
	fd, err := f.dst.OpenAt(e.rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if sfd, err := f.src.OpenAt(e.rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK, 0); err == nil {
		setUserXattrs(fd, userXattrs(sfd))
		unix.Close(sfd)
	}
	if os.Geteuid() == 0 {
		if err := unix.Fchown(fd, int(e.st.Uid), int(e.st.Gid)); err != nil {
			return err
		}
	}
	if err := unix.Fchmod(fd, e.st.Mode&0o777); err != nil {
		return err
	}
	return unix.UtimesNanoAt(fd, "", []unix.Timespec{e.st.Atim, e.st.Mtim}, unix.AT_EMPTY_PATH)
}
