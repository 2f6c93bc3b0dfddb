package nodelog

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"

	gofs "github.com/hanwen/go-fuse/v2/fs"
)

// logScan is what a run of the node log's records says: the nodes the kernel holds (where the record that named
// each last is, and the one of a rename begun since), where each one's count and backing records are (their values
// are read where they are: they change in place), the file handles' high-water mark. A takeover reads the whole log
// into one (Read); a compaction reads the log up to a point into one, and copies the records it holds into the
// other half (compact). Records are decoded only for the nodes held in the end.
type logScan struct {
	held             map[uint64]namedAt
	counts, backings map[uint64]int64
	handles          uint32
}

// namedAt is where a held node's records are: the last that named it, the rename begun since (0: none).
type namedAt struct{ named, renaming int64 }

func newLogScan() *logScan {
	return &logScan{held: map[uint64]namedAt{}, counts: map[uint64]int64{}, backings: map[uint64]int64{}}
}

// scan reads the records from from up to to, or to the first one not whole, into st, and returns where it
// stopped. A record no build writes, or one that runs past to, is an error: the log is not read past it.
func (l *Log) scan(st *logScan, from, to int64) (int64, error) {
	off := from
	for off+recordFixed <= to {
		size := l.recordSize(off)
		if size == 0 {
			break
		}
		if size < recordFixed || size%8 != 0 || off+size > to {
			return off, fmt.Errorf("the node log has a record of %d bytes at %d", size, off)
		}
		kind, name := l.recordAt(off, size)
		id := binary.LittleEndian.Uint64(l.mem[off+recID:])
		switch {
		case kind == kindForgot:
			delete(st.held, id)
			delete(st.counts, id)
			delete(st.backings, id)
		case kind == kindCount:
			st.counts[id] = off
		case kind == kindHandles:
			if id <= math.MaxUint32 {
				st.handles = max(st.handles, uint32(id))
			}
		case kind == kindBacking:
			st.backings[id] = off // the last one's (one written over in place)
		case kind == kindNamed && validEntryBytes(name):
			st.held[id] = namedAt{named: off}
		case kind == kindRenaming && validEntryBytes(name):
			if at, ok := st.held[id]; ok {
				at.renaming = off
				st.held[id] = at
			}
		case kind == kindNamed || kind == kindRenaming: // a name no request could carry: left out
		default:
			return off, fmt.Errorf("the node log has a record of kind %d at %d", kind, off)
		}
		off += size
	}
	return off, nil
}

// recordAt is the kind and the name of the whole record of size bytes at off (within the log, whatever size says:
// read again by node, it may have changed since scan checked it).
func (l *Log) recordAt(off, size int64) (kind uint8, name []byte) {
	kindLen := binary.LittleEndian.Uint32(l.mem[off+recKind:])
	if n := int64(kindLen >> 8); recName+n <= size && off+recName+n <= int64(len(l.mem)) {
		name = l.mem[off+recName : off+recName+n]
	}
	return uint8(kindLen), name
}

// node is the held node id as its records say, false if they no longer name it as a request could: a daemon a
// session subverted may rewrite them between scan and here, so the names are copied, then checked again.
func (l *Log) node(id uint64, at namedAt) (gofs.RecordedNode, bool) {
	_, name := l.recordAt(at.named, l.recordSize(at.named))
	r := gofs.RecordedNode{ID: id, Parent: l.load(at.named + recParent), Name: string(name), Ino: l.load(at.named + recIno)}
	if !validEntryBytes([]byte(r.Name)) {
		return r, false
	}
	if at.renaming != 0 {
		_, alt := l.recordAt(at.renaming, l.recordSize(at.renaming))
		r.AltParent, r.AltName = l.load(at.renaming+recParent), string(alt)
		if !validEntryBytes([]byte(r.AltName)) {
			r.AltParent, r.AltName = 0, "" // as scan leaves out such a rename
		}
	}
	return r, true
}

// recordSize is the size of the record at off, as its length says (0: none whole there).
func (l *Log) recordSize(off int64) int64 {
	return int64(atomic.LoadUint32((*uint32)(unsafe.Pointer(&l.mem[off+recLength]))))
}

// liveBytes is about what st takes written out (a compaction's result).
func (l *Log) liveBytes(st *logScan) int64 {
	var n int64
	for _, at := range st.held {
		n += l.recordSize(at.named)
		if at.renaming != 0 {
			n += l.recordSize(at.renaming)
		}
	}
	return n + int64(len(st.counts)+len(st.backings)+1)*recordFixed
}
