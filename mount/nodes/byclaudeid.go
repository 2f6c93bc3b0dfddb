package nodes

import (
	"context"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/claude"
)

// ByClaudeID is by-claude-id/: for every conversation in the store, <uuid> is a symlink to ../sessions/<id>,
// the session that owns it (claude.Holders says which, when several hold the uuid). It reads the store on each
// lookup and listing, and its answers are cached only briefly, so it stays current as transcripts appear.
type ByClaudeID struct {
	fs.Inode
	tree *Tree

	mu    sync.Mutex
	index map[string]agents.Holder // conversation uuid -> its owner, from the last listing
	built time.Time
	listed
}

var (
	_ = (fs.NodeLookuper)((*ByClaudeID)(nil))
	_ = (fs.NodeReaddirer)((*ByClaudeID)(nil))
	_ = (fs.NodeGetattrer)((*ByClaudeID)(nil))
)

// byIDTimeout is how long the kernel may keep an answer of by-claude-id.
const byIDTimeout = time.Second

func (b *ByClaudeID) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	out.SetEntryTimeout(byIDTimeout)
	out.SetAttrTimeout(byIDTimeout)
	h, ok := b.indexed(name)
	if !ok {
		holders, err := claude.Holders(b.tree.Store, name)
		if err != nil || len(holders) == 0 {
			return nil, syscall.ENOENT
		}
		h = holders[0]
	}
	target := []byte("../sessions/" + h.ID)
	// The link carries the conversation's time (when its transcript was made), not 1970.
	attr := fuse.Attr{Mode: syscall.S_IFLNK | 0o777, Size: uint64(len(target))}
	t := uint64(h.Born.Unix())
	attr.Mtime, attr.Ctime, attr.Atime = t, t, t
	link := &fs.MemSymlink{Data: target, Attr: attr}
	out.Attr = attr
	return b.NewInode(ctx, link, fs.StableAttr{Mode: syscall.S_IFLNK}), 0
}

// indexed answers from the last listing's index while it is fresh, checking that the transcript is still there:
// ls -l of the folder then costs one scan of the store, not one per entry.
func (b *ByClaudeID) indexed(uuid string) (agents.Holder, bool) {
	b.mu.Lock()
	h, ok := b.index[uuid]
	fresh := time.Since(b.built) < byIDTimeout
	b.mu.Unlock()
	if !ok || !fresh {
		return agents.Holder{}, false
	}
	return h, claude.Holds(b.tree.Store, h)
}

func (b *ByClaudeID) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	index, err := claude.Index(b.tree.Store)
	if err != nil {
		return nil, storeErrno(err)
	}
	ents := make([]fuse.DirEntry, 0, len(index))
	for uuid := range index {
		ents = append(ents, fuse.DirEntry{Name: uuid, Mode: syscall.S_IFLNK})
	}
	slices.SortFunc(ents, func(x, y fuse.DirEntry) int { return strings.Compare(x.Name, y.Name) })
	b.mu.Lock()
	b.index, b.built = index, time.Now()
	b.mu.Unlock()
	return &uncached{fs.NewListDirStream(ents), &b.Inode, &b.listed}, 0
}

func (b *ByClaudeID) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFDIR | 0o555
	out.SetTimeout(byIDTimeout)
	var st syscall.Stat_t
	// The sessions folder the daemon holds open, not the path, which could lead elsewhere by now.
	if _, err := fstat(b.tree.sessions.Fd(), &st); err == nil {
		out.Mtime, out.Mtimensec = uint64(st.Mtim.Sec), uint32(st.Mtim.Nsec)
	}
	b.mtime(&out.Attr)
	return 0
}
