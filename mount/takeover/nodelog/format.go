package nodelog

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The node log's file format, all of it: every offset in the file is named here, and this file's Version says
// which layout a log is. A build reads and writes its own version only; package mount refuses an upgrade or a move
// between builds of two versions before anything stops (its upgrade.go and holder_move.go compare Version), so a
// change to anything below is a new Version, and a line in its history.
//
// Version history:
//
//	6  two halves, the log compacted from one into the other; the header a page (the half that is the log,
//	   compactions)
//	5  an exchange's inode numbers in the ring of changes (a slot's from and to)
//	4  the passthrough bits, and a backing record's refs (its inode number field, in place)
//	3  the ring of changes
//	2  lookup counts (the count record, in place)
//	1  the header (magic, version), then the records: named, forgot, backing (its id), handles, renaming
//
// The file, little-endian throughout, its size sealed when it is made (2 × the half's size past halvesAt):
//
//	0           the header page (headerSize bytes)
//	4096        the passthrough bits: a bit a file handle, passthroughHandles of them
//	12288       the ring of changes: ChangeSlots slots of changeSlotSize bytes
//	halvesAt    half 0, then half 1 (each a multiple of pageSize, at most maxHalf): one is the log, the other
//	            is what a compaction writes
const (
	magic   = 0x73666e6c // "sfnl"
	Version = 6          // this build's layout (the history above)

	// The header page.
	headerSize        = 4096
	headerMagic       = 0  // uint32: magic
	headerVersion     = 4  // uint32: Version
	headerActive      = 8  // uint32: the half that is the log (0, 1), stored at once by a compaction's switch
	headerCompactions = 12 // uint32: how often any daemon that wrote the log compacted it

	// The passthrough bits: bit fh%64 of the uint64 at passthroughBits+fh/64*8 is file handle fh's. A handle at or
	// past passthroughHandles has none.
	passthroughBits    = headerSize
	passthroughHandles = 1 << 16

	// The ring of changes: a request's slot is its unique id modulo ChangeSlots.
	changeRing  = passthroughBits + passthroughHandles/8
	ChangeSlots = 1024
	// A slot: the request's unique id (uint64, stored last: 0 while the slot is written), the folder's node id, the
	// name's length, the inode numbers an exchange swaps (its old name's, its new name's; 0 for other changes),
	// the name (up to 255 bytes).
	slotUnique     = 0
	slotParent     = 8
	slotNameLen    = 16
	slotFrom       = 24
	slotTo         = 32
	slotName       = 40
	changeSlotSize = slotName + 256

	// The halves start after the ring, at a page (madvise frees them whole).
	halvesAt = changeRing + ChangeSlots*changeSlotSize
	pageSize = 4096
	// maxHalf is the largest half (the one a daemon makes, but in the fault-injection build): address space,
	// paged in as written (about 100 bytes a node the kernel holds, its count included).
	maxHalf = 64 << 20
	maxSize = halvesAt + 2*maxHalf

	// A record, 8-byte aligned (padded with zeros after its name):
	recLength   = 0  // uint32: the record's size, padding included; stored last (a record not whole reads as 0: the end)
	recKind     = 4  // uint32: the kind in the low byte, the name's length above it
	recID       = 8  // uint64: the node id (kindHandles: the file handles' high-water mark)
	recParent   = 16 // uint64: the parent's node id (kindCount: the lookup count; kindBacking: the backing id)
	recIno      = 24 // uint64: the inode number (kindBacking: how many open files use the backing id)
	recordFixed = 32 // the name follows
	recName     = recordFixed

	// The kinds of record. A count and a backing record are one per node, written over in place (their parent
	// and inode number fields, atomically); every other record is appended once.
	kindNamed    = 1 // node id is known to the kernel as name in folder parent, inode number ino
	kindForgot   = 2 // the kernel let node id go: its records before are void
	kindBacking  = 3 // node id's passthrough backing id and refs (backing 0: closed)
	kindHandles  = 4 // no file handle at or past id was handed out yet
	kindRenaming = 5 // node id is about to be renamed to name in folder parent (a named record follows once it was)
	kindCount    = 6 // node id's lookup count (0: a forgot record follows)
)

var _ [0]struct{} = [halvesAt % pageSize]struct{}{} // the halves start at a page

// writeRecord writes a record into rec (its whole size), its length last: from then on it is whole.
func writeRecord(rec []byte, kind uint8, id, parent, ino uint64, name string) {
	binary.LittleEndian.PutUint32(rec[recKind:], uint32(kind)|uint32(len(name))<<8)
	binary.LittleEndian.PutUint64(rec[recID:], id)
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&rec[recParent])), parent) // a count or a backing, read as it is written
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&rec[recIno])), ino)
	copy(rec[recName:], name)
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&rec[recLength])), uint32(len(rec)))
}

// recordSizeOf is the size a record with a name of n bytes takes.
func recordSizeOf(n int) int64 { return int64(recordFixed+n+7) &^ 7 }

// writeHeader writes a new log's header: this version, half 0 the log.
func writeHeader(mem []byte) {
	binary.LittleEndian.PutUint32(mem[headerMagic:], magic)
	binary.LittleEndian.PutUint32(mem[headerVersion:], Version)
}

// headerOK says whether mem's header is this version's.
func headerOK(mem []byte) bool {
	return binary.LittleEndian.Uint32(mem[headerMagic:]) == magic && binary.LittleEndian.Uint32(mem[headerVersion:]) == Version
}

// VersionOf is the version in the header of the node log in fd (of any build), 0 if fd holds no node log. It reads
// the header without mapping the file.
func VersionOf(fd int) uint32 {
	head := make([]byte, headerVersion+4)
	if n, err := unix.Pread(fd, head, 0); err != nil || n != len(head) || binary.LittleEndian.Uint32(head[headerMagic:]) != magic {
		return 0
	}
	return binary.LittleEndian.Uint32(head[headerVersion:])
}
