package takeover

import (
	"fmt"
	"net/rpc"
	"os"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/sessionfs/sessionfs/mount/takeover/nodelog"
)

// ResendIdempotent answers the requests the kernel resends to a daemon that took the connection over
// (takeover.go) as if each were made once. The daemon before may have made the change and died before it
// answered: the resent rename then finds no source, the resent mkdir or O_EXCL create finds its entry. The kernel
// marks a resent request (fuseUniqueResend in its unique id; a caller cannot set it), and a change found made is
// taken as the one asked for only if the daemon before noted this request's id as making that very change (the
// node log's ring of changes, mount/takeover/nodelog): an entry someone else made or removed meanwhile gets the
// plain answer (EEXIST, ENOENT). Every daemon of a held mount notes each such request before it makes it, in the
// node log it writes (nodelog.Current: a daemon serves one mount).
type ResendIdempotent struct {
	fuse.RawFileSystem
}

// fuseUniqueResend is FUSE_UNIQUE_RESEND: the kernel's mark on a request it sends again (Linux 6.9).
const fuseUniqueResend = 1 << 63

func resent(h *fuse.InHeader) bool { return h.Unique&fuseUniqueResend != 0 }

// changing notes, before it is made, that request h changes name in folder parent; a resent request is not noted
// again (its note, if the daemon before made it, is what tells its change).
func (r ResendIdempotent) changing(h *fuse.InHeader, parent uint64, name string) {
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
func (r ResendIdempotent) ownChange(h *fuse.InHeader, parent uint64, name string) bool {
	return resent(h) && nodelog.Current().Changed(h.Unique&^fuseUniqueResend, parent, name)
}

// exists looks name up in folder parent, and gives the lookup back: whether it is there. (A name not there is
// answered OK with node 0: the kernel caches it as missing.)
func (r ResendIdempotent) exists(cancel <-chan struct{}, h *fuse.InHeader, parent uint64, name string) bool {
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
func (r ResendIdempotent) found(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut, st fuse.Status) fuse.Status {
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
func (r ResendIdempotent) Rename(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
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
func (r ResendIdempotent) exchange(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
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
func (r ResendIdempotent) ino(cancel <-chan struct{}, h *fuse.InHeader, parent uint64, name string) uint64 {
	lh := *h
	lh.NodeId = parent
	var out fuse.EntryOut
	if r.RawFileSystem.Lookup(cancel, &lh, name, &out) != fuse.OK || out.NodeId == 0 {
		return 0
	}
	r.RawFileSystem.Forget(out.NodeId, 1)
	return out.Attr.Ino
}

func (r ResendIdempotent) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	r.changing(&in.InHeader, in.NodeId, name)
	return r.found(cancel, &in.InHeader, name, out, made(r.RawFileSystem.Mkdir(cancel, in, name, out), name))
}

func (r ResendIdempotent) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	r.changing(&in.InHeader, in.NodeId, name)
	return r.found(cancel, &in.InHeader, name, out, made(r.RawFileSystem.Mknod(cancel, in, name, out), name))
}

func (r ResendIdempotent) Symlink(cancel <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	r.changing(h, h.NodeId, name)
	return r.found(cancel, h, name, out, made(r.RawFileSystem.Symlink(cancel, h, target, name, out), name))
}

func (r ResendIdempotent) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	r.changing(&in.InHeader, in.NodeId, name)
	return r.found(cancel, &in.InHeader, name, out, made(r.RawFileSystem.Link(cancel, in, name, out), name))
}

// Create: only an O_EXCL create can fail on what the daemon before made (without it, the file found is opened);
// noted as its own, it opens the file it made.
func (r ResendIdempotent) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
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

func (r ResendIdempotent) Unlink(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	r.changing(h, h.NodeId, name)
	if st := made(r.RawFileSystem.Unlink(cancel, h, name), name); st != fuse.ENOENT || !r.ownChange(h, h.NodeId, name) {
		return st
	}
	return fuse.OK
}

func (r ResendIdempotent) Rmdir(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	r.changing(h, h.NodeId, name)
	if st := made(r.RawFileSystem.Rmdir(cancel, h, name), name); st != fuse.ENOENT || !r.ownChange(h, h.NodeId, name) {
		return st
	}
	return fuse.OK
}

// A request that killed one daemon must not kill every daemon after it. The kernel resends what a dead
// daemon had read to the daemon that takes over; a request that kills whoever serves it (a session's file that
// takes the daemon past its cgroup's MemoryMax, a crash) would be resent into the same death, daemon after daemon,
// and its caller and every user of the mount would wait for good. So a daemon that took over tells its holder of
// each resent request before it serves it and once it answered it (ResendGuard, go-fuse's ResendGuard); when the
// daemon dies with one of them unanswered, the holder tells the daemon after it, which answers that request EIO.
// A request is served by at most two daemons: the one it was sent to, and the one it was resent to. The holder's
// other bound, maxFailedTakeovers, counts daemons that die before they serve, which such a daemon may not be.

// ResendGuard is go-fuse's ResendGuard of a daemon that took the connection over (see above).
type ResendGuard struct {
	Holder *rpc.Client       // the daemon's client of its holder
	Fatal  map[uint64]uint32 // read only: the resent requests a daemon died serving
}

func (g ResendGuard) Admit(unique uint64, opcode uint32) fuse.Status {
	if _, ok := g.Fatal[unique]; ok {
		fmt.Fprintf(os.Stderr, "sessionfs: request %d (%s), resent, killed the daemons it was sent to: answered EIO\n", unique, fuse.OpcodeName(opcode))
		return fuse.EIO
	}
	// Told before it is served: a holder gone (an error here) ends the mount anyway.
	_ = g.Holder.Call("Holder.Resending", ResendingArgs{Unique: unique, Opcode: opcode}, nil)
	return fuse.OK
}

func (g ResendGuard) Done(unique uint64) { _ = g.Holder.Call("Holder.Resent", unique, nil) }

// ResendingArgs is a resent request a daemon is about to serve.
type ResendingArgs struct {
	Unique uint64
	Opcode uint32
}

// Resending: the daemon serves resent request args.Unique now.
func (h *Holder) Resending(args ResendingArgs, _ *struct{}) error {
	h.hand.Lock()
	defer h.hand.Unlock()
	if h.resending == nil {
		h.resending = map[uint64]uint32{}
	}
	if len(h.resending) < maxFatal {
		h.resending[args.Unique] = args.Opcode
	}
	return nil
}

// Resent: the daemon answered resent request unique.
func (h *Holder) Resent(unique uint64, _ *struct{}) error {
	h.hand.Lock()
	delete(h.resending, unique)
	h.hand.Unlock()
	return nil
}
