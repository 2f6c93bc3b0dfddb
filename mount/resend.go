package mount

import (
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// resendIdempotent answers the requests the kernel resends to a daemon that took the connection over
// (takeover.go) as if each were made once. The daemon before may have made the change and died before it
// answered: the resent rename then finds no source, the resent mkdir finds its folder. The kernel marks a resent
// request (fuseUniqueResend in its unique id; a caller cannot set it), and only those are answered so: a change
// found made is taken as the one asked for. Other requests pass through.
type resendIdempotent struct {
	fuse.RawFileSystem
}

// fuseUniqueResend is FUSE_UNIQUE_RESEND: the kernel's mark on a request it sends again (Linux 6.9).
const fuseUniqueResend = 1 << 63

func resent(h *fuse.InHeader) bool { return h.Unique&fuseUniqueResend != 0 }

// exists looks name up in folder parent, and gives the lookup back: whether it is there. (A name not there is
// answered OK with node 0: the kernel caches it as missing.)
func (r resendIdempotent) exists(cancel <-chan struct{}, h *fuse.InHeader, parent uint64, name string) bool {
	lh := *h
	lh.NodeId = parent
	var out fuse.EntryOut
	if r.RawFileSystem.Lookup(cancel, &lh, name, &out) != fuse.OK || out.NodeId == 0 {
		return false
	}
	r.RawFileSystem.Forget(out.NodeId, 1)
	return true
}

// found answers a resent request that made an entry with the entry found under name (a lookup, which the kernel
// counts as the request's own answer).
func (r resendIdempotent) found(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut, st fuse.Status) fuse.Status {
	if st != fuse.Status(syscall.EEXIST) || !resent(h) {
		return st
	}
	if r.RawFileSystem.Lookup(cancel, h, name, out) != fuse.OK || out.NodeId == 0 {
		return st
	}
	return fuse.OK
}

func (r resendIdempotent) Rename(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	st := r.RawFileSystem.Rename(cancel, in, oldName, newName)
	if st == fuse.ENOENT && resent(&in.InHeader) && !r.exists(cancel, &in.InHeader, in.NodeId, oldName) &&
		r.exists(cancel, &in.InHeader, in.Newdir, newName) {
		return fuse.OK
	}
	return st
}

func (r resendIdempotent) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	return r.found(cancel, &in.InHeader, name, out, r.RawFileSystem.Mkdir(cancel, in, name, out))
}

func (r resendIdempotent) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	return r.found(cancel, &in.InHeader, name, out, r.RawFileSystem.Mknod(cancel, in, name, out))
}

func (r resendIdempotent) Symlink(cancel <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	return r.found(cancel, h, name, out, r.RawFileSystem.Symlink(cancel, h, target, name, out))
}

func (r resendIdempotent) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	return r.found(cancel, &in.InHeader, name, out, r.RawFileSystem.Link(cancel, in, name, out))
}

func (r resendIdempotent) Unlink(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	if st := r.RawFileSystem.Unlink(cancel, h, name); st != fuse.ENOENT || !resent(h) {
		return st
	}
	return fuse.OK
}

func (r resendIdempotent) Rmdir(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	if st := r.RawFileSystem.Rmdir(cancel, h, name); st != fuse.ENOENT || !resent(h) {
		return st
	}
	return fuse.OK
}
