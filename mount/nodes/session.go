package nodes

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/layout"
)

// SessionDir is sessions/<id>, a session's folder: passed through to the store, an anchor at <id>. A lookup in it
// tells the binder the session is wanted; its agents' folders (.claude, .gemini, ...) are AgentDirs; its listing
// puts session.json first, and the unlink of session.json moves the whole session to the trash (sessionrm.go).
type SessionDir struct {
	Node
}

var (
	_ = (fs.NodeLookuper)((*SessionDir)(nil))
	_ = (fs.NodeUnlinker)((*SessionDir)(nil))
	_ = (fs.NodeOpendirHandler)((*SessionDir)(nil))
	_ = (parentKind)((*SessionDir)(nil))
	_ = (fs.NodeOnForgetter)((*SessionDir)(nil))
)

// OnForget: the kernel let go of the session's node (session_nodes.go).
func (s *SessionDir) OnForget() {
	s.tree.forgetSession(s)
	s.Node.OnForget()
}

func (s *SessionDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	s.tree.noteUse(ctx, s.id)
	s.tree.wantBinds(ctx, s.id) // the mount binds app and mcps once they hold something: they may now
	return s.lookupStore(ctx, name, out)
}

// childNode: an agent's folder is an AgentDir.
func (s *SessionDir) childNode(name, rel string, dir bool) storeNode {
	if a := all.ByDir(name); a != nil && dir {
		return &AgentDir{agent: a}
	}
	return nil
}

// Unlink of session.json takes the whole session to the trash with it (sessionrm.go).
func (s *SessionDir) Unlink(ctx context.Context, name string) syscall.Errno {
	if name != layout.MetaFile {
		return s.Node.Unlink(ctx, name)
	}
	s.noteOwnChange(s.child(name))
	return s.tree.removeSession(s.id)
}

// OpendirHandle lists the session with session.json first (sessionrm.go), kept by the kernel as any folder's.
func (s *SessionDir) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	s.tree.touch(s.id)
	fd, err := s.tree.openAt(s.path(), syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, 0, fs.ToErrno(err)
	}
	h, errno := s.sessionListing(fd)
	return h, fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, errno
}
