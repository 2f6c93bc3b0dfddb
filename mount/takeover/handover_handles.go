package takeover

import (
	"fmt"
	"os"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/sessionfs/sessionfs/mount/nodes"
)

// Reopened serves, in a daemon that took a normal user's connection over, the file handles the daemon before
// handed out (those below the node log's high-water mark): their descriptors went with it, and without
// passthrough (which needs root) the kernel sends their reads and writes here. Each is opened again on its node
// at its first use, with the open flags the request carries (less O_APPEND: a write carries its offset), and
// released with it. A root mount's files are passthrough: the kernel reads and writes them itself.
type Reopened struct {
	fuse.RawFileSystem

	mu    sync.Mutex
	below uint64            // handles under it are the daemons' before (set once the log is read)
	fhs   map[uint64]uint64 // an old handle: the one opened for it
	Tree  *nodes.Tree       // told of the old handles' locks (lockowners_handles.go)
}

// handleStep is go-fuse's: the node log marks the handles handed out at each multiple of it
// (third_party/go-fuse/fs/takeover.go).
const handleStep = 1024

func NewReopened(fs fuse.RawFileSystem) *Reopened {
	return &Reopened{RawFileSystem: fs, fhs: map[uint64]uint64{}}
}

// setBelow says which handles the daemons before handed out: those under upTo (the node log's mark).
func (r *Reopened) SetBelow(upTo uint32) {
	upTo = max(upTo, handleStep) // below the first mark, every handle was under it (go-fuse's RestoreNodes)
	r.mu.Lock()
	r.below = uint64(upTo)
	r.mu.Unlock()
}

// handle is the handle to serve fh with: fh itself, or the one opened for an old fh on node h.NodeId.
func (r *Reopened) handle(cancel <-chan struct{}, h *fuse.InHeader, fh uint64, flags uint32) (uint64, fuse.Status) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if fh == 0 || fh >= r.below {
		return fh, fuse.OK
	}
	if got, ok := r.fhs[fh]; ok {
		return got, fuse.OK
	}
	in := fuse.OpenIn{InHeader: *h, Flags: flags &^ uint32(syscall.O_APPEND|syscall.O_CREAT|syscall.O_EXCL|syscall.O_TRUNC)}
	var out fuse.OpenOut
	if st := r.RawFileSystem.Open(cancel, &in, &out); !st.Ok() {
		fmt.Fprintf(os.Stderr, "sessionfs: open again file handle %d of node %d (flags %#o): %v\n", fh, h.NodeId, in.Flags, st)
		return 0, st
	}
	r.fhs[fh] = out.Fh
	r.reopenedFor(out.Fh, fh)
	return out.Fh, fuse.OK
}

func (r *Reopened) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	fh, st := r.handle(cancel, &in.InHeader, in.Fh, in.Flags)
	if !st.Ok() {
		return nil, st
	}
	c := *in
	c.Fh = fh
	return r.RawFileSystem.Read(cancel, &c, buf)
}

func (r *Reopened) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	fh, st := r.handle(cancel, &in.InHeader, in.Fh, in.Flags)
	if !st.Ok() {
		return 0, st
	}
	c := *in
	c.Fh = fh
	return r.RawFileSystem.Write(cancel, &c, data)
}

func (r *Reopened) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	fh, st := r.handle(cancel, &in.InHeader, in.Fh, in.Flags)
	if !st.Ok() {
		return 0, st
	}
	c := *in
	c.Fh = fh
	return r.RawFileSystem.Writev(cancel, &c, data)
}

// old says whether fh is a handle of the daemons before, and the one opened for it (0: none yet).
func (r *Reopened) old(fh uint64) (bool, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fh != 0 && fh < r.below, r.fhs[fh]
}

func (r *Reopened) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	if old, fh := r.old(in.Fh); old {
		if fh == 0 {
			return fuse.OK // written through a descriptor gone with its daemon: nothing held here
		}
		c := *in
		c.Fh = fh
		return r.RawFileSystem.Flush(cancel, &c)
	}
	return r.RawFileSystem.Flush(cancel, in)
}

func (r *Reopened) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	fh, st := r.handle(cancel, &in.InHeader, in.Fh, syscall.O_RDONLY)
	if !st.Ok() {
		return st
	}
	c := *in
	c.Fh = fh
	return r.RawFileSystem.Fsync(cancel, &c)
}

func (r *Reopened) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	if !r.releaseOld(cancel, in) {
		r.RawFileSystem.Release(cancel, in)
	}
}

// releaseOld releases, when in.Fh is a daemon before's handle, what was opened for it, and tells the lock table:
// whether it was one.
func (r *Reopened) releaseOld(cancel <-chan struct{}, in *fuse.ReleaseIn) bool {
	old, fh := r.old(in.Fh)
	if !old {
		return false
	}
	if fh != 0 {
		r.mu.Lock()
		delete(r.fhs, in.Fh)
		r.mu.Unlock()
		c := *in
		c.Fh = fh
		r.RawFileSystem.Release(cancel, &c)
	}
	r.releasedOld(in.Fh)
	return true
}
