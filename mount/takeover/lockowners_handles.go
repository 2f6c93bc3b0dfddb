package takeover

import (
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Lock requests through a file handle of a daemon before this one (lockowners.go): the handle is opened again on
// its node (Reopened.handle), as a normal user's mount does for reads and writes, and the request is served
// through it; the lock table is told which old handle it stands for, since that is the one the kernel releases.
// A root mount's other requests on old handles are the kernel's (passthrough) or go-fuse's: LockReopened passes
// them straight on.

// lockHandle is the handle to serve a lock request on old handle in.Fh with. flock's stay with the file the
// daemon before had (the kernel's passthrough backing file holds them), so they are passed on as they are.
func (r *Reopened) lockHandle(cancel <-chan struct{}, in *fuse.LkIn) (fuse.LkIn, fuse.Status) {
	c := *in
	if in.LkFlags&fuse.FUSE_LK_FLOCK != 0 {
		return c, fuse.OK
	}
	fh, st := r.handle(cancel, &in.InHeader, in.Fh, syscall.O_RDONLY)
	c.Fh = fh
	return c, st
}

func (r *Reopened) GetLk(cancel <-chan struct{}, in *fuse.LkIn, out *fuse.LkOut) fuse.Status {
	c, st := r.lockHandle(cancel, in)
	if !st.Ok() {
		return st
	}
	return r.RawFileSystem.GetLk(cancel, &c, out)
}

func (r *Reopened) SetLk(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	c, st := r.lockHandle(cancel, in)
	if !st.Ok() {
		return st
	}
	return r.RawFileSystem.SetLk(cancel, &c)
}

func (r *Reopened) SetLkw(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	c, st := r.lockHandle(cancel, in)
	if !st.Ok() {
		return st
	}
	return r.RawFileSystem.SetLkw(cancel, &c)
}

// reopenedFor tells the lock table that handle now was opened for old, a daemon before's (r.mu held).
func (r *Reopened) reopenedFor(now, old uint64) {
	if r.Tree != nil {
		r.Tree.ReopenedHandle(now, old)
	}
}

// releasedOld tells the lock table that the kernel released old handle fh: the owners adopted by it let go.
func (r *Reopened) releasedOld(fh uint64) {
	if r.Tree != nil {
		r.Tree.ReleaseOldHandle(fh)
	}
}

// LockReopened is a root mount's Reopened: old handles opened again for lock requests only.
type LockReopened struct{ *Reopened }

func (r LockReopened) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	return r.RawFileSystem.Read(cancel, in, buf)
}

func (r LockReopened) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	return r.RawFileSystem.Write(cancel, in, data)
}

func (r LockReopened) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	return r.RawFileSystem.Writev(cancel, in, data)
}

func (r LockReopened) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	return r.RawFileSystem.Flush(cancel, in)
}

func (r LockReopened) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	return r.RawFileSystem.Fsync(cancel, in)
}

// Release of an old handle releases what was opened for it, and the handle itself: go-fuse counts down the
// passthrough backing file it used (RestorePassthrough).
func (r LockReopened) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	r.releaseOld(cancel, in)
	r.RawFileSystem.Release(cancel, in)
}
