package mount

import (
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// noOpendir answers the first OPENDIR with ENOSYS. The kernel then never sends OPENDIR or RELEASEDIR again
// (FUSE_NO_OPENDIR_SUPPORT) and keeps every folder's listing cached, as FOPEN_CACHE_DIR|FOPEN_KEEP_CACHE did,
// until the watcher or a change through the mount invalidates it: ls, find, du, git status and rm -rf save two
// round trips for each folder they open, and a walk of cached folders costs none. The kernel then reads a folder
// with no handle (Fh 0): the daemon opens one itself for the read, and a listing read in several requests
// continues on the same handle, so a synthetic folder (the sessions) is listed once per read, not per request.
type noOpendir struct {
	fuse.RawFileSystem
	server *fuse.Server

	mu sync.Mutex
	// reading holds the handle of a listing read part way, by node id, for the request that continues it.
	reading map[uint64]dirRead
}

// dirRead is a daemon-held folder handle and the offset its next read starts at.
type dirRead struct {
	fh   uint64
	next uint64
	at   time.Time
}

// readingTTL releases the handle of a reader that stopped part way (ls | head).
const readingTTL = 5 * time.Second

// maxReading bounds the handles held for listings read part way.
const maxReading = 256

func newNoOpendir(fs fuse.RawFileSystem) *noOpendir {
	return &noOpendir{RawFileSystem: fs, reading: map[uint64]dirRead{}}
}

func (w *noOpendir) Init(s *fuse.Server) {
	w.server = s
	w.RawFileSystem.Init(s)
}

func (w *noOpendir) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if w.server.KernelSettings().Flags64()&fuse.CAP_NO_OPENDIR_SUPPORT == 0 {
		return w.RawFileSystem.OpenDir(cancel, in, out) // a kernel older than 5.1 would fail the open
	}
	return fuse.ENOSYS
}

func (w *noOpendir) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return w.read(cancel, in, out, w.RawFileSystem.ReadDir)
}

func (w *noOpendir) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return w.read(cancel, in, out, w.RawFileSystem.ReadDirPlus)
}

type readFunc func(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status

func (w *noOpendir) read(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList, read readFunc) fuse.Status {
	if in.Fh != 0 {
		return read(cancel, in, out) // opened before the kernel learnt it needs no OPENDIR
	}
	fh, st := w.handle(cancel, &in.InHeader, in.Offset)
	if !st.Ok() {
		return st
	}
	rin := *in
	rin.Fh = fh
	st = read(cancel, &rin, out)
	if !st.Ok() || out.Offset == in.Offset { // an error, or the end of the listing
		w.release(in.NodeId, fh)
		return st
	}
	w.keep(in.NodeId, dirRead{fh: fh, next: out.Offset, at: time.Now()})
	return st
}

// handle takes the handle whose listing continues at offset, or opens a new one.
func (w *noOpendir) handle(cancel <-chan struct{}, h *fuse.InHeader, offset uint64) (uint64, fuse.Status) {
	w.mu.Lock()
	r, ok := w.reading[h.NodeId]
	delete(w.reading, h.NodeId)
	w.mu.Unlock()
	if ok {
		if r.next == offset {
			return r.fh, fuse.OK
		}
		w.release(h.NodeId, r.fh)
	}
	var out fuse.OpenOut
	st := w.RawFileSystem.OpenDir(cancel, &fuse.OpenIn{InHeader: *h, Flags: syscall.O_RDONLY | syscall.O_DIRECTORY}, &out)
	return out.Fh, st
}

// keep holds r for the request that continues it, and releases the handles of readers that went away.
func (w *noOpendir) keep(node uint64, r dirRead) {
	var stale []dirRead
	var nodes []uint64
	w.mu.Lock()
	if old, ok := w.reading[node]; ok { // two readers of one folder: the other one opens anew
		stale, nodes = append(stale, old), append(nodes, node)
	}
	w.reading[node] = r
	for n, o := range w.reading {
		// Readers that went away, and beyond maxReading any other: a process stopping part way through many
		// folders must not make the daemon hold a descriptor for each. A reader whose handle went opens anew.
		if n != node && (time.Since(o.at) > readingTTL || len(w.reading) > maxReading) {
			stale, nodes = append(stale, o), append(nodes, n)
			delete(w.reading, n)
		}
	}
	w.mu.Unlock()
	for i, o := range stale {
		w.release(nodes[i], o.fh)
	}
}

func (w *noOpendir) release(node, fh uint64) {
	w.RawFileSystem.ReleaseDir(&fuse.ReleaseIn{InHeader: fuse.InHeader{NodeId: node}, Fh: fh})
}

// Forget releases a handle still held for the node first: go-fuse drops a node's entry with the kernel's last
// reference, and its handles must be gone by then.
func (w *noOpendir) Forget(node, nlookup uint64) {
	w.mu.Lock()
	r, ok := w.reading[node]
	delete(w.reading, node)
	w.mu.Unlock()
	if ok {
		w.release(node, r.fh)
	}
	w.RawFileSystem.Forget(node, nlookup)
}

// FsyncDir syncs a folder through a handle opened for the call.
func (w *noOpendir) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	if in.Fh != 0 {
		return w.RawFileSystem.FsyncDir(cancel, in)
	}
	var out fuse.OpenOut
	if st := w.RawFileSystem.OpenDir(cancel, &fuse.OpenIn{InHeader: in.InHeader, Flags: syscall.O_RDONLY | syscall.O_DIRECTORY}, &out); !st.Ok() {
		return st
	}
	defer w.release(in.NodeId, out.Fh)
	fin := *in
	fin.Fh = out.Fh
	return w.RawFileSystem.FsyncDir(cancel, &fin)
}
