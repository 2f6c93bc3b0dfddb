package nodes

import (
	"context"
	"slices"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// IndexFile, at the mount's top, is what ls and find ask a mount of their store: the sessions whose index records
// the mount vouches for, each with its fingerprint (layout.IndexWatch), made when the file is opened. Not listed,
// and only the store's owner and root may read it: it tells when each session last changed.
const IndexFile = ".sessionfs-index"

// indexNode is IndexFile.
type indexNode struct {
	fs.Inode
	tree *Tree
}

var (
	_ = (fs.NodeGetattrer)((*indexNode)(nil))
	_ = (fs.NodeOpener)((*indexNode)(nil))
	_ = (fs.NodeReaddirer)((*Root)(nil))
)

func (n *indexNode) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	var st syscall.Stat_t
	if _, err := lstat(n.tree.Store.Root, &st); err != nil {
		return fs.ToErrno(err)
	}
	out.Mode = syscall.S_IFREG | 0o400
	out.Uid, out.Gid = st.Uid, st.Gid
	return 0
}

// Open answers with the sessions vouched for now (every change made before the open is taken into account), read
// past the size Getattr gives (0): the kernel keeps no pages of it.
func (n *indexNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		return nil, 0, syscall.EACCES
	}
	var st syscall.Stat_t
	if _, err := lstat(n.tree.Store.Root, &st); err != nil {
		return nil, 0, fs.ToErrno(err)
	}
	if caller, ok := fuse.FromContext(ctx); !ok || caller.Uid != 0 && caller.Uid != st.Uid {
		return nil, 0, syscall.EACCES
	}
	return bytesHandle(n.tree.IndexWatch.Vouch()), fuse.FOPEN_DIRECT_IO, 0
}

// bytesHandle is an open file of fixed content.
type bytesHandle []byte

var _ = (fs.FileReader)(bytesHandle(nil))

func (h bytesHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off < 0 || off >= int64(len(h)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(h[off:min(int64(len(h)), off+int64(len(dest)))]), 0
}

// Readdir lists the top's folders, not IndexFile.
func (r *Root) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	var out []fuse.DirEntry
	for name, ch := range r.Children() {
		if name != IndexFile {
			out = append(out, fuse.DirEntry{Name: name, Mode: ch.Mode(), Ino: ch.StableAttr().Ino})
		}
	}
	slices.SortFunc(out, func(a, b fuse.DirEntry) int { return strings.Compare(a.Name, b.Name) })
	return fs.NewListDirStream(out), 0
}
