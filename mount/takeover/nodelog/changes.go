package nodelog

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// The passthrough bits and the ring of changes (doc.go says what each is for; format.go, where they are).

// Passthrough sets (on) or clears handle fh's bit.
func (l *Log) Passthrough(fh uint32, on bool) {
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

// PassthroughHandles lists the handles whose bit is set: those go-fuse's RestorePassthrough counts a restored
// backing id down on.
func (l *Log) PassthroughHandles() []uint32 {
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

func changeSlot(unique uint64) int64 { return changeRing + int64(unique%ChangeSlots)*changeSlotSize }

// current is the node log this process writes (the last that New or Map made), where the changes are noted.
var current atomic.Pointer[Log]

// Current is the node log this process writes (the last New or Map made; nil: none, and its methods of the ring
// of changes note nothing and find nothing): a daemon serves one mount, whose requests that change a folder are
// noted there (package mount's resend.go).
func Current() *Log { return current.Load() }

// Changing notes that request unique is about to change name in folder parent.
func (l *Log) Changing(unique, parent uint64, name string) {
	l.noteChange(unique, parent, name, 0, 0)
}

// Exchanging notes that request unique is about to exchange name in folder parent, now inode to, with the name
// whose inode is from.
func (l *Log) Exchanging(unique, parent uint64, name string, from, to uint64) {
	l.noteChange(unique, parent, name, from, to)
}

func (l *Log) noteChange(unique, parent uint64, name string, from, to uint64) {
	if l == nil || len(name) > 255 {
		return
	}
	off := changeSlot(unique)
	slot := l.mem[off : off+changeSlotSize]
	id := (*uint64)(unsafe.Pointer(&slot[slotUnique]))
	atomic.StoreUint64(id, 0) // torn while written: matches nothing
	binary.LittleEndian.PutUint64(slot[slotParent:], parent)
	binary.LittleEndian.PutUint64(slot[slotNameLen:], uint64(len(name)))
	binary.LittleEndian.PutUint64(slot[slotFrom:], from)
	binary.LittleEndian.PutUint64(slot[slotTo:], to)
	copy(slot[slotName:], name)
	atomic.StoreUint64(id, unique)
}

// Changed says whether request unique was noted as changing name in folder parent (by this daemon or one before).
func (l *Log) Changed(unique, parent uint64, name string) bool {
	_, _, ok := l.Exchanged(unique, parent, name)
	return ok
}

// Exchanged says whether request unique was noted as changing name in folder parent, and the inode numbers it
// noted (Exchanging; 0 for another change).
func (l *Log) Exchanged(unique, parent uint64, name string) (from, to uint64, ok bool) {
	if l == nil || unique == 0 {
		return 0, 0, false
	}
	off := changeSlot(unique)
	slot := l.mem[off : off+changeSlotSize]
	id := (*uint64)(unsafe.Pointer(&slot[slotUnique]))
	if atomic.LoadUint64(id) != unique {
		return 0, 0, false
	}
	n := binary.LittleEndian.Uint64(slot[slotNameLen:])
	same := binary.LittleEndian.Uint64(slot[slotParent:]) == parent && n == uint64(len(name)) &&
		string(slot[slotName:slotName+min(n, 256)]) == name
	from, to = binary.LittleEndian.Uint64(slot[slotFrom:]), binary.LittleEndian.Uint64(slot[slotTo:])
	return from, to, same && atomic.LoadUint64(id) == unique
}
