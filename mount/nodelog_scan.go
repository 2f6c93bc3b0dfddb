package mount

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"

	gofs "github.com/hanwen/go-fuse/v2/fs"
)

// logScan is what a run of the node log's records says: the nodes the kernel holds, where each one's count and
// backing records are (their values are read where they are: they change in place), the file handles' high-water
// mark. A takeover reads the whole log into one (read); a compaction reads the log up to a point into one, and
// writes it into the other half (compact).
type logScan struct {
	held             map[uint64]gofs.RecordedNode
	counts, backings map[uint64]int64
	handles          uint32
}

func newLogScan() *logScan {
	return &logScan{held: map[uint64]gofs.RecordedNode{}, counts: map[uint64]int64{}, backings: map[uint64]int64{}}
}

// scan reads the records from from up to to, or to the first one not whole, into st, and returns where it
// stopped. A record no build writes, or one that runs past to, is an error: the log is not read past it.
func (l *nodeLog) scan(st *logScan, from, to int64) (int64, error) {
	off := from
	for off+nodeRecordFixed <= to {
		size := int64(atomic.LoadUint32((*uint32)(unsafe.Pointer(&l.mem[off]))))
		if size == 0 {
			break
		}
		if size < nodeRecordFixed || size%8 != 0 || off+size > to {
			return off, fmt.Errorf("the node log has a record of %d bytes at %d", size, off)
		}
		rec := l.mem[off : off+size]
		kindLen := binary.LittleEndian.Uint32(rec[4:])
		kind, n := uint8(kindLen), int64(kindLen>>8)
		id := binary.LittleEndian.Uint64(rec[8:])
		var name string
		if nodeRecordFixed+n <= size {
			name = string(rec[nodeRecordFixed : nodeRecordFixed+n])
		}
		switch {
		case kind == nodeForgot:
			delete(st.held, id)
			delete(st.counts, id)
			delete(st.backings, id)
		case kind == nodeCount:
			st.counts[id] = off
		case kind == nodeHandles:
			if id <= math.MaxUint32 {
				st.handles = max(st.handles, uint32(id))
			}
		case kind == nodeBacking:
			st.backings[id] = off // the last one's (one written over in place)
		case kind == nodeNamed && validEntryName(name):
			st.held[id] = gofs.RecordedNode{ID: id, Parent: l.load(off + 16), Name: name, Ino: l.load(off + 24)}
		case kind == nodeRenaming && validEntryName(name):
			if r, ok := st.held[id]; ok {
				r.AltParent, r.AltName = l.load(off+16), name
				st.held[id] = r
			}
		case kind == nodeNamed || kind == nodeRenaming: // a name no request could carry: left out
		default:
			return off, fmt.Errorf("the node log has a record of kind %d at %d", kind, off)
		}
		off += size
	}
	return off, nil
}

// liveBytes is about what st takes written out (a compaction's result).
func (st *logScan) liveBytes() int64 {
	var n int64
	for _, r := range st.held {
		n += int64(nodeRecordFixed+len(r.Name)+7) &^ 7
		if r.AltName != "" {
			n += int64(nodeRecordFixed+len(r.AltName)+7) &^ 7
		}
	}
	return n + int64(len(st.counts)+len(st.backings)+1)*nodeRecordFixed
}
