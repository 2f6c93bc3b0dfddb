package nodes

import (
	"context"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// viewDirStream lists a store folder seen under an alias view (or on another filesystem than the store's), giving
// its sub-folders the same inode numbers that lookup gives them, so readdir and stat agree.
type viewDirStream struct {
	fs.FileHandle        // the loopback folder stream
	dirs, all     uint64 // mixed into sub-folders' inode numbers, and into every entry's
}

var (
	_ = (fs.FileReaddirenter)((*viewDirStream)(nil))
	_ = (fs.FileSeekdirer)((*viewDirStream)(nil))
	_ = (fs.FileReleasedirer)((*viewDirStream)(nil))
	_ = (fs.FileFsyncdirer)((*viewDirStream)(nil))
)

func (v *viewDirStream) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	e, errno := v.FileHandle.(fs.FileReaddirenter).Readdirent(ctx)
	if e != nil && e.Name != "." && e.Name != ".." {
		e.Ino ^= v.all
		if e.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			e.Ino ^= v.dirs
		}
	}
	return e, errno
}

func (v *viewDirStream) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	return v.FileHandle.(fs.FileSeekdirer).Seekdir(ctx, off)
}

func (v *viewDirStream) Releasedir(ctx context.Context, flags uint32) {
	v.FileHandle.(fs.FileReleasedirer).Releasedir(ctx, flags)
}

func (v *viewDirStream) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	return v.FileHandle.(fs.FileFsyncdirer).Fsyncdir(ctx, flags)
}

// uncached is the listing of a synthetic folder no watcher follows (the projects views, by-claude-id). The mount
// declines OPENDIR, so the kernel keeps every listing it reads, until the folder's mtime changes. Such a folder
// shows the time of its last listing as its mtime (listed), and when a listing has been read (its handle closes)
// the kernel is told to ask for the attributes again: the next listing finds a new mtime and is made anew. (The
// projects views show the store folder's mtime instead, never kept: their listing changes only with it.)
type uncached struct {
	fs.DirStream
	in     *fs.Inode
	listed *listed
}

var _ = (fs.FileSeekdirer)((*uncached)(nil))

func (u *uncached) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if sd, ok := u.DirStream.(fs.FileSeekdirer); ok {
		return sd.Seekdir(ctx, off)
	}
	return syscall.ENOTSUP
}

// Close marks the listing read; the notification goes off the request path, since the kernel waits for this
// request's answer.
func (u *uncached) Close() {
	u.DirStream.Close()
	u.listed.at.Store(time.Now().UnixNano())
	go u.in.NotifyContent(-1, 0) // attributes only: the new mtime resets the cached listing
}

// listed is when a synthetic folder was last listed (ns; 0: never).
type listed struct{ at atomic.Int64 }

// mtime shows the last listing's time as a's mtime when it is later than a's own.
func (l *listed) mtime(a *fuse.Attr) {
	ns := l.at.Load()
	if ns <= 0 {
		return
	}
	if sec, nsec := uint64(ns/1e9), uint32(ns%1e9); sec > a.Mtime || sec == a.Mtime && nsec > a.Mtimensec {
		a.Mtime, a.Mtimensec = sec, nsec
	}
}

// readEntries reads the folder open as fd (which it takes) whole, keeping the entries keep accepts (it may change
// them).
func readEntries(fd int, keep func(*fuse.DirEntry) bool) ([]fuse.DirEntry, syscall.Errno) {
	ds, errno := fs.NewLoopbackDirStreamFd(fd)
	if errno != 0 {
		syscall.Close(fd)
		return nil, errno
	}
	defer ds.Close()
	var ents []fuse.DirEntry
	for ds.HasNext() {
		e, errno := ds.Next()
		if errno != 0 {
			return nil, errno
		}
		if keep(&e) {
			ents = append(ents, e)
		}
	}
	return ents, 0
}
