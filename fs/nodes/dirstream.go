package nodes

import (
	"context"
	"syscall"

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
