package nodes

import (
	"slices"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/sessionfs/sessionfs/layout"
)

// Removing a session through the mount keeps it whole: rm -rf sessions/<id> (or Node's fs.rm, find -delete,
// shutil.rmtree) removes entries in listing order, and a session's listing starts with session.json, whose
// unlink moves the whole session to the trash at once. What the remover does next finds nothing (ENOENT, which
// rm -f ignores; find and shutil.rmtree report it), and "sessionfs trash restore <id>" brings the session back
// as it was, workspace included. An empty session folder (nothing left to lose) is trashed by rmdir
// (Sessions.Rmdir).

// removeSession moves session id to the trash, for the unlink of its session.json (SessionDir.Unlink). The
// sessions folder's entry is not noted as our own change: the store watcher then tells the kernel the session is
// gone.
func (t *Tree) removeSession(id string) syscall.Errno {
	// The session's binds go first: what rm does next must find nothing, not the trashed folders through them.
	defer t.removing(id)()
	_, err := t.Store.Remove(id)
	return storeErrno(err)
}

// sessionListing lists a session folder open as fd (which it takes) with session.json first, after "." and "..",
// and the same inode numbers lookup gives.
func (s *SessionDir) sessionListing(fd int) (fs.FileHandle, syscall.Errno) {
	var dirs, all uint64
	var st syscall.Stat_t
	if _, err := fstat(fd, &st); err == nil {
		dirs, all = s.tree.inoMix(st.Dev, s.alias)
	}
	ents, errno := readEntries(fd, func(e *fuse.DirEntry) bool {
		if e.Name != "." && e.Name != ".." {
			e.Ino ^= all
			if e.Mode&syscall.S_IFMT == syscall.S_IFDIR {
				e.Ino ^= dirs
			}
		}
		return true
	})
	if errno != 0 {
		return nil, errno
	}
	slices.SortStableFunc(ents, func(a, b fuse.DirEntry) int { return listRank(a.Name) - listRank(b.Name) })
	return fs.NewListDirStream(ents).(fs.FileHandle), 0
}

func listRank(name string) int {
	switch name {
	case ".", "..":
		return 0
	case layout.MetaFile:
		return 1
	}
	return 2
}
