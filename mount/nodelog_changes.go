package mount

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// Before the node log's halves, a ring of the requests that change a folder (make, remove or rename an entry), each
// noted by the kernel's unique id before it is made: a daemon that takes over and is resent such a request
// (resend.go) finds the change made, and takes it as this request's own only if the ring holds its id, with the
// same folder and name. Otherwise the change is someone else's, and the request gets what it would have got
// (EEXIST, ENOENT). A RENAME_EXCHANGE, which finds both names there whether it was made or not, notes the inode
// numbers under its two names too: resent, it was made if the names hold them swapped. A slot is the unique id's:
// more requests in flight at once than slots overwrite one another, and those get the plain answer.
const (
	changeSlots = 1024
	// unique id (stored last), folder's node id, name's length, the inode numbers an exchange swaps (its old name's,
	// its new name's; 0 for other changes), name
	changeSlotSize = 8 + 8 + 8 + 8 + 8 + 256
	changeName     = 40
	changeRing     = passthroughBits + passthroughHandles/8

	// After the header, a bit for each file handle that reads and writes through its node's passthrough backing
	// file (gofs.NodeLog.Passthrough): the RELEASE of such a handle of a daemon before counts down its node's
	// backing refs in the daemon after it, which closes the backing id with the last (and a flock taken on the
	// file goes). A handle past the bits is not told: its node's backing id stays till the mount ends.
	passthroughHandles = 1 << 16
	passthroughBits    = nodeLogHeader
)

// Passthrough sets (on) or clears handle fh's bit.
func (l *nodeLog) Passthrough(fh uint32, on bool) {
	if fh >= passthroughHandles {
		return
	}
	word := (*uint64)(unsafe.Pointer(&l.mem[passthroughBits+int64(fh/64)*8]))
	if on {
		atomic.OrUint64(word, 1<<(fh%64))
	} else {
		atomic.AndUint64(word, ^uint64(1<<(fh%64)))
	}
}

// passthrough lists the handles whose bit is set.
func (l *nodeLog) passthrough() []uint32 {
	var fhs []uint32
	for w := range uint32(passthroughHandles / 64) {
		bits := atomic.LoadUint64((*uint64)(unsafe.Pointer(&l.mem[passthroughBits+int64(w)*8])))
		for b := range uint32(64) {
			if bits&(1<<b) != 0 {
				fhs = append(fhs, w*64+b)
			}
		}
	}
	return fhs
}

func changeSlot(unique uint64) int64 { return changeRing + int64(unique%changeSlots)*changeSlotSize }

// changeLog is the node log this process writes (mapNodeLog), where the changes are noted (resend.go).
var changeLog atomic.Pointer[nodeLog]

// Changing notes that request unique is about to change name in folder parent.
func (l *nodeLog) Changing(unique, parent uint64, name string) {
	l.noteChange(unique, parent, name, 0, 0)
}

// Exchanging notes that request unique is about to exchange name in folder parent, now inode to, with the name
// whose inode is from.
func (l *nodeLog) Exchanging(unique, parent uint64, name string, from, to uint64) {
	l.noteChange(unique, parent, name, from, to)
}

func (l *nodeLog) noteChange(unique, parent uint64, name string, from, to uint64) {
	if l == nil || len(name) > 255 {
		return
	}
	off := changeSlot(unique)
	slot := l.mem[off : off+changeSlotSize]
	id := (*uint64)(unsafe.Pointer(&slot[0]))
	atomic.StoreUint64(id, 0) // torn while written: matches nothing
	binary.LittleEndian.PutUint64(slot[8:], parent)
	binary.LittleEndian.PutUint64(slot[16:], uint64(len(name)))
	binary.LittleEndian.PutUint64(slot[24:], from)
	binary.LittleEndian.PutUint64(slot[32:], to)
	copy(slot[changeName:], name)
	atomic.StoreUint64(id, unique)
}

// Changed says whether request unique was noted as changing name in folder parent (by this daemon or one before).
func (l *nodeLog) Changed(unique, parent uint64, name string) bool {
	_, _, ok := l.exchanged(unique, parent, name)
	return ok
}

// exchanged says whether request unique was noted as changing name in folder parent, and the inode numbers it
// noted (Exchanging).
func (l *nodeLog) exchanged(unique, parent uint64, name string) (from, to uint64, ok bool) {
	if l == nil || unique == 0 {
		return 0, 0, false
	}
	off := changeSlot(unique)
	slot := l.mem[off : off+changeSlotSize]
	id := (*uint64)(unsafe.Pointer(&slot[0]))
	if atomic.LoadUint64(id) != unique {
		return 0, 0, false
	}
	n := binary.LittleEndian.Uint64(slot[16:])
	same := binary.LittleEndian.Uint64(slot[8:]) == parent && n == uint64(len(name)) &&
		string(slot[changeName:changeName+min(n, 256)]) == name
	from, to = binary.LittleEndian.Uint64(slot[24:]), binary.LittleEndian.Uint64(slot[32:])
	return from, to, same && atomic.LoadUint64(id) == unique
}
