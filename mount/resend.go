package mount

import (
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/sessionfs/sessionfs/mount/takeover/nodelog"
)

// resendIdempotent answers the requests the kernel resends to a daemon that took the connection over
// (takeover.go) as if each were made once. The daemon before may have made the change and died before it
// answered: the resent rename then finds no source, the resent mkdir or O_EXCL create finds its entry. The kernel
// marks a resent request (fuseUniqueResend in its unique id; a caller cannot set it), and a change found made is
// taken as the one asked for only if the daemon before noted this request's id as making that very change (the
// node log's ring of changes, mount/takeover/nodelog): an entry someone else made or removed meanwhile gets the
// plain answer (EEXIST, ENOENT). Every daemon of a held mount notes each such request before it makes it, in the
// node log it writes (nodelog.Current: a daemon serves one mount).
type resendIdempotent struct {
	fuse.RawFileSystem
}

// fuseUniqueResend is FUSE_UNIQUE_RESEND: the kernel's mark on a request it sends again (Linux 6.9).
const fuseUniqueResend = 1 << 63

func resent(h *fuse.InHeader) bool { return h.Unique&fuseUniqueResend != 0 }

// changing notes, before it is made, that request h changes name in folder parent; a resent request is not noted
// again (its note, if the daemon before made it, is what tells its change).
func (r resendIdempotent) changing(h *fuse.InHeader, parent uint64, name string) {
	if !resent(h) {
		nodelog.Current().Changing(h.Unique, parent, name)
	}
}

// made passes st on, once the change it answers is made (the fault-injection build may die there: madeFault).
func made(st fuse.Status, name string) fuse.Status {
	if st == fuse.OK {
		madeFault(name)
	}
	return st
}

// ownChange says whether a resent request h was noted as changing name in parent: the change found is its own.
func (r resendIdempotent) ownChange(h *fuse.InHeader, parent uint64, name string) bool {
	return resent(h) && nodelog.Current().Changed(h.Unique&^fuseUniqueResend, parent, name)
}

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

// found answers a resent request that made an entry, noted as its own, with the entry found under name (a lookup,
// which the kernel counts as the request's own answer).
func (r resendIdempotent) found(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut, st fuse.Status) fuse.Status {
	if st != fuse.Status(syscall.EEXIST) || !r.ownChange(h, h.NodeId, name) {
		return st
	}
	if r.RawFileSystem.Lookup(cancel, h, name, out) != fuse.OK || out.NodeId == 0 {
		return st
	}
	return fuse.OK
}

// Rename: a rename resent after it was made finds no source (RENAME_NOREPLACE too: the source is looked for first).
// An exchange finds both names whether it was made or not: it is noted with the inodes it swaps.
func (r resendIdempotent) Rename(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	if in.Flags&renameExchange != 0 {
		return r.exchange(cancel, in, oldName, newName)
	}
	r.changing(&in.InHeader, in.Newdir, newName)
	st := made(r.RawFileSystem.Rename(cancel, in, oldName, newName), newName)
	if st == fuse.ENOENT && r.ownChange(&in.InHeader, in.Newdir, newName) && !r.exists(cancel, &in.InHeader, in.NodeId, oldName) &&
		r.exists(cancel, &in.InHeader, in.Newdir, newName) {
		return fuse.OK
	}
	return st
}

// renameExchange is RENAME_EXCHANGE in a RENAME request's flags.
const renameExchange = 1 << 1

// exchange makes a RENAME_EXCHANGE once: resent, it is answered as made if the daemon before noted it as this
// request's, with the inodes then under its two names, and the names hold them swapped now. Made twice, it would
// swap them back.
func (r resendIdempotent) exchange(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	h := &in.InHeader
	if !resent(h) {
		from, to := r.ino(cancel, h, in.NodeId, oldName), r.ino(cancel, h, in.Newdir, newName)
		nodelog.Current().Exchanging(h.Unique, in.Newdir, newName, from, to)
		return made(r.RawFileSystem.Rename(cancel, in, oldName, newName), newName)
	}
	from, to, own := nodelog.Current().Exchanged(h.Unique&^fuseUniqueResend, in.Newdir, newName)
	if own && from != 0 && to != 0 && r.ino(cancel, h, in.NodeId, oldName) == to && r.ino(cancel, h, in.Newdir, newName) == from {
		return fuse.OK
	}
	return made(r.RawFileSystem.Rename(cancel, in, oldName, newName), newName)
}

// ino is the inode number of name in folder parent (0: none there), by a lookup it gives back.
func (r resendIdempotent) ino(cancel <-chan struct{}, h *fuse.InHeader, parent uint64, name string) uint64 {
	lh := *h
	lh.NodeId = parent
	var out fuse.EntryOut
	if r.RawFileSystem.Lookup(cancel, &lh, name, &out) != fuse.OK || out.NodeId == 0 {
		return 0
	}
	r.RawFileSystem.Forget(out.NodeId, 1)
	return out.Attr.Ino
}

func (r resendIdempotent) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	r.changing(&in.InHeader, in.NodeId, name)
	return r.found(cancel, &in.InHeader, name, out, made(r.RawFileSystem.Mkdir(cancel, in, name, out), name))
}

func (r resendIdempotent) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	r.changing(&in.InHeader, in.NodeId, name)
	return r.found(cancel, &in.InHeader, name, out, made(r.RawFileSystem.Mknod(cancel, in, name, out), name))
}

func (r resendIdempotent) Symlink(cancel <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	r.changing(h, h.NodeId, name)
	return r.found(cancel, h, name, out, made(r.RawFileSystem.Symlink(cancel, h, target, name, out), name))
}

func (r resendIdempotent) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	r.changing(&in.InHeader, in.NodeId, name)
	return r.found(cancel, &in.InHeader, name, out, made(r.RawFileSystem.Link(cancel, in, name, out), name))
}

// Create: only an O_EXCL create can fail on what the daemon before made (without it, the file found is opened);
// noted as its own, it opens the file it made.
func (r resendIdempotent) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	if in.Flags&syscall.O_EXCL == 0 {
		return r.RawFileSystem.Create(cancel, in, name, out)
	}
	r.changing(&in.InHeader, in.NodeId, name)
	st := made(r.RawFileSystem.Create(cancel, in, name, out), name)
	if st != fuse.Status(syscall.EEXIST) || !r.ownChange(&in.InHeader, in.NodeId, name) {
		return st
	}
	again := *in
	again.Flags &^= syscall.O_EXCL
	return r.RawFileSystem.Create(cancel, &again, name, out)
}

func (r resendIdempotent) Unlink(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	r.changing(h, h.NodeId, name)
	if st := made(r.RawFileSystem.Unlink(cancel, h, name), name); st != fuse.ENOENT || !r.ownChange(h, h.NodeId, name) {
		return st
	}
	return fuse.OK
}

func (r resendIdempotent) Rmdir(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	r.changing(h, h.NodeId, name)
	if st := made(r.RawFileSystem.Rmdir(cancel, h, name), name); st != fuse.ENOENT || !r.ownChange(h, h.NodeId, name) {
		return st
	}
	return fuse.OK
}
