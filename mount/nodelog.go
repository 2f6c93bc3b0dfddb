package mount

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

// The node log: the node ids a serving process handed to the kernel, each as the name it was looked up by in its
// parent (go-fuse's NodeLog, the takeover patch in third_party/go-fuse). It lives in a memory file the helper
// holds, so it outlives the serving process: the process that takes the connection over reads it and looks each
// name up again (takeover.go). Appending a record is a copy into shared memory, no system call.
//
// The file is a header page (nodeLogMagic, the version, which half is the log, how often it was compacted), the
// passthrough bits and the ring of changes (nodelog_changes.go), then two halves of equal size: one is the log,
// the other is where it is compacted to (nodelog_compact.go). The log is records, each 8-byte aligned: a length
// (uint32, stored last and atomically: a record cut off by a kill reads as the end), a kind and the name's length,
// the node id, the parent's (or a number the kind says), the inode number, the name. A node's lookup count is one
// record that is written over in place as the count changes (nodeCount), so that a restored node is freed by the
// kernel's FORGETs. The process that reads it trusts nothing in it: a confined daemon that a session subverted
// wrote it. Names are checked as a FUSE request's are, and each is only looked up beneath its parent, as a request
// would be.

const (
	nodeLogMagic = 0x73666e6c // "sfnl"
	// 6: two halves, compacted from one into the other; 5: an exchange's inodes in the ring of changes; 4: the
	// passthrough handles and backing refs; 3: the ring of changes; 2: lookup counts (nodeCount). A build reads
	// its own version only (an upgrade between two is refused before anything stops: upgrade.go).
	nodeLogVersion = 6
	nodeLogHeader  = 4096 // the header page: magic, version, the half that is the log (nodeLogActive), compactions
	nodeLogActive  = 8
	nodeLogCompact = 12
	// nodeLogHalf is each half's size: address space, paged in as written (about 100 bytes a node the kernel
	// holds, its count included); the log is compacted once it passes a mark (nodelog_compact.go).
	nodeLogHalf = 64 << 20
	nodeLogSize = halvesAt + 2*nodeLogHalf

	nodeNamed    = 1
	nodeForgot   = 2
	nodeBacking  = 3 // the parent field holds the backing id, the inode number's how many files use it (in place)
	nodeHandles  = 4 // the id field holds the file handles' high-water mark
	nodeRenaming = 5
	nodeCount    = 6 // the parent field holds the node's lookup count, kept up to date in place

	nodeRecordFixed = 4 + 4 + 8 + 8 + 8 // length, kind (and the name's length), id, parent, inode number
)

// nodeLog appends to the memory file.
type nodeLog struct {
	fd   int    // the memory file (kept open: the helper gets a copy)
	mem  []byte // mapped shared
	half int64  // each half's size

	// switching is held shared by whoever writes the log (a record, a count in place), and alone by a
	// compaction while it moves the log to the other half (compactSwitch).
	switching  sync.RWMutex
	base, end  int64 // the half that is the log
	next       atomic.Int64
	mark       int64          // where a record starts a compaction
	live       int64          // the bytes the last compaction left
	compacts   atomic.Bool    // a compaction is under way
	compacted  sync.WaitGroup // the compactions started
	compactMu  sync.Mutex     // a compaction's end is told (compactEnd) to those that wait for room
	compactEnd *sync.Cond
	full       sync.Once
	clean      [2]bool // which half holds nothing (this process wrote it so, or made the file): compact's alone
	stats      compactStats

	countMu  sync.Mutex
	counts   map[uint64]int64 // each node id's count record: where its lookup count is kept
	backings map[uint64]int64 // each node id's backing record, while it has a backing id
}

// newNodeLog makes an empty log in a new memory file.
func newNodeLog() (*nodeLog, error) { return newNodeLogSized(nodeLogHalfSize()) }

// newNodeLogSized makes an empty log whose halves are half bytes (a multiple of the page size).
func newNodeLogSized(half int64) (*nodeLog, error) {
	fd, err := unix.MemfdCreate("sessionfs-nodes", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("make the node log: %w", err)
	}
	if err := unix.Ftruncate(fd, halvesAt+2*half); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("size the node log: %w", err)
	}
	// Its size for good, before another process gets it: the readers map it, and a daemon a session subverted
	// (ftruncate is among its calls) would shrink it under their mapping (SIGBUS: doctor, the next daemon).
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("seal the node log's size: %w", err)
	}
	l, err := mapNodeLog(fd)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	binary.LittleEndian.PutUint32(l.mem[0:], nodeLogMagic)
	binary.LittleEndian.PutUint32(l.mem[4:], nodeLogVersion)
	l.use(0, halvesAt, 0)
	l.clean = [2]bool{true, true}
	return l, nil
}

func mapNodeLog(fd int) (*nodeLog, error) {
	l, err := mapNodeLogAs(fd, unix.PROT_READ|unix.PROT_WRITE)
	if err == nil {
		changeLog.Store(l) // the log this process writes: its changes are noted there too
	}
	return l, err
}

// mapNodeLogAs maps the log in fd with prot (PROT_READ: to count it, never to append).
func mapNodeLogAs(fd, prot int) (*nodeLog, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	half := (st.Size - halvesAt) / 2
	if st.Size > nodeLogSize || half < pageSize || half%pageSize != 0 || halvesAt+2*half != st.Size {
		return nil, fmt.Errorf("the node log is %d bytes, not two halves of up to %d", st.Size, nodeLogHalf)
	}
	mem, err := unix.Mmap(fd, 0, int(st.Size), prot, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map the node log: %w", err)
	}
	l := &nodeLog{fd: fd, mem: mem, half: half, counts: map[uint64]int64{}, backings: map[uint64]int64{}}
	l.compactEnd = sync.NewCond(&l.compactMu)
	l.use(0, halvesAt, 0)
	return l, nil
}

// pageSize is what a half's size and place are a multiple of (madvise frees whole pages).
const pageSize = 4096

// use makes half which (0 or 1) the log, appended to at next, with live bytes of it what the last compaction
// left (switching held alone, or no other user yet).
func (l *nodeLog) use(which int, next, live int64) {
	l.base = halvesAt + int64(which)*l.half
	l.end = l.base + l.half
	l.next.Store(next)
	l.live = live
	l.mark = l.base + compactMark(l.half, live)
}

// Named records that the kernel holds node id (inode ino), looked up as name in parent.
func (l *nodeLog) Named(id, parent uint64, name string, ino uint64) {
	l.record(nodeNamed, id, parent, ino, name)
}

// Renaming records that node id is about to be renamed to name in parent.
func (l *nodeLog) Renaming(id, parent uint64, name string) {
	l.record(nodeRenaming, id, parent, 0, name)
}

// Forgot records that the kernel let node id go.
func (l *nodeLog) Forgot(id uint64) { l.record(nodeForgot, id, 0, 0, "") }

// Handles records that no file handle at or past upTo was handed out yet.
func (l *nodeLog) Handles(upTo uint32) { l.record(nodeHandles, uint64(upTo), 0, 0, "") }

// record appends a record, once the compaction under way made room when the log is full.
func (l *nodeLog) record(kind uint8, id, parent, ino uint64, name string) {
	for {
		l.switching.RLock()
		off := l.append(kind, id, parent, ino, name)
		l.switching.RUnlock()
		if off != appendLater {
			return
		}
		l.awaitCompaction()
	}
}

// Backing records node id's passthrough backing id (0: closed) and how many open files use it, in one record per
// node written over in place, as its lookup count.
func (l *nodeLog) Backing(id uint64, backing int32, refs int) {
	for {
		l.switching.RLock()
		l.countMu.Lock()
		later := l.backing(id, backing, refs)
		l.countMu.Unlock()
		l.switching.RUnlock()
		if !later {
			return
		}
		l.awaitCompaction()
	}
}

// backing is Backing, with switching held shared and countMu held: it says whether to wait for room.
func (l *nodeLog) backing(id uint64, backing int32, refs int) (later bool) {
	off, ok := l.backings[id]
	if !ok {
		if backing != 0 {
			if off = l.append(nodeBacking, id, uint64(uint32(backing)), uint64(max(refs, 0)), ""); off >= 0 {
				l.backings[id] = off
			}
		}
		return off == appendLater
	}
	if backing == 0 {
		delete(l.backings, id) // registered again, it gets a record of its own
	}
	l.store(off+24, uint64(max(refs, 0)))
	l.store(off+16, uint64(uint32(backing)))
	return false
}

// Counted records node id's lookup count. A node's count is one record, written over in place (a store of 8
// bytes, no system call): the first count appends it.
func (l *nodeLog) Counted(id, count uint64) {
	for {
		l.switching.RLock()
		l.countMu.Lock()
		later := l.counted(id, count)
		l.countMu.Unlock()
		l.switching.RUnlock()
		if !later {
			return
		}
		l.awaitCompaction()
	}
}

// counted is Counted, with switching held shared and countMu held: it says whether to wait for room.
func (l *nodeLog) counted(id, count uint64) (later bool) {
	off, ok := l.counts[id]
	switch {
	case !ok && count == 0:
	case !ok:
		if off = l.append(nodeCount, id, count, 0, ""); off >= 0 {
			l.counts[id] = off
		}
		return off == appendLater
	case count == 0:
		delete(l.counts, id) // Forgot follows; a node id handed out again gets a record of its own
		fallthrough
	default:
		l.store(off+16, count)
	}
	return false
}

var _ gofs.NodeLog = (*nodeLog)(nil)

func (l *nodeLog) store(off int64, v uint64) {
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&l.mem[off])), v)
}
func (l *nodeLog) load(off int64) uint64 {
	return atomic.LoadUint64((*uint64)(unsafe.Pointer(&l.mem[off])))
}

// appendLater: the log is full and a compaction makes room (awaitCompaction).
const appendLater = -2

// append appends a record and returns where (-1: the log is full; appendLater), switching held shared. The record
// that passes the mark starts a compaction (nodelog_compact.go).
func (l *nodeLog) append(kind uint8, id, parent, ino uint64, name string) int64 {
	size := int64(nodeRecordFixed+len(name)+7) &^ 7
	off := l.next.Add(size) - size
	if off+size > l.end {
		if l.mark < l.end { // a compaction makes room: the one under way, or one started now (a daemon that took over)
			if l.compacts.CompareAndSwap(false, true) {
				l.compacted.Go(l.compact)
			}
			return appendLater
		}
		l.full.Do(func() {
			fmt.Fprintf(os.Stderr, "sessionfs: the node log is full (%d bytes of nodes the kernel holds, of %d): files looked up from now on are lost to a restarted daemon\n",
				l.live, l.half)
		})
		return -1
	}
	writeRecord(l.mem[off:off+size], kind, id, parent, ino, name)
	if off+size > l.mark && l.compacts.CompareAndSwap(false, true) {
		l.compacted.Go(l.compact)
	}
	return off
}

// writeRecord writes a record into rec, its length last: from then on it is whole.
func writeRecord(rec []byte, kind uint8, id, parent, ino uint64, name string) {
	binary.LittleEndian.PutUint32(rec[4:], uint32(kind)|uint32(len(name))<<8)
	binary.LittleEndian.PutUint64(rec[8:], id)
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&rec[16])), parent) // a count or a backing, read as it is written
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&rec[24])), ino)
	copy(rec[nodeRecordFixed:], name)
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&rec[0])), uint32(len(rec)))
}

// errNodeLog: the log is not one this build reads.
var errNodeLog = fmt.Errorf("the node log is not sessionfs's of version %d", nodeLogVersion)

// read reads the nodes the kernel holds (the last name each was given, those forgotten left out) and the file
// handles' high-water mark, and sets the log to append after its last whole record.
func (l *nodeLog) read() (nodes []gofs.RecordedNode, handles uint32, err error) {
	if v := binary.LittleEndian.Uint32(l.mem[4:]); binary.LittleEndian.Uint32(l.mem[0:]) != nodeLogMagic || v != nodeLogVersion {
		return nil, 0, errNodeLog
	}
	which := atomic.LoadUint32((*uint32)(unsafe.Pointer(&l.mem[nodeLogActive])))
	if which > 1 {
		return nil, 0, fmt.Errorf("the node log's header names half %d", which)
	}
	base := halvesAt + int64(which)*l.half
	st := newLogScan()
	end, err := l.scan(st, base, base+l.half)
	if err != nil {
		return nil, 0, err
	}
	nodes = make([]gofs.RecordedNode, 0, len(st.held))
	for id, at := range st.held {
		r, ok := l.node(id, at)
		if !ok {
			continue
		}
		if at, ok := st.counts[id]; ok {
			r.Lookups = l.load(at + 16)
		}
		if at, ok := st.backings[id]; ok {
			backing, refs := l.load(at+16), l.load(at+24)
			if backing <= math.MaxInt32 && refs <= math.MaxInt32 {
				r.Backing, r.Refs = int32(backing), int(refs)
			}
			if r.Backing == 0 {
				delete(st.backings, id)
			}
		}
		nodes = append(nodes, r)
	}
	l.switching.Lock()
	l.use(int(which), end, l.liveBytes(st))
	l.switching.Unlock()
	l.countMu.Lock()
	l.counts, l.backings = st.counts, st.backings // this process counts on in the same records
	l.countMu.Unlock()
	return nodes, st.handles, nil
}

// validEntryBytes is a name a FUSE request could carry: a folder entry's.
func validEntryBytes(name []byte) bool {
	if len(name) == 0 || len(name) > 255 || name[0] == '.' && (len(name) == 1 || len(name) == 2 && name[1] == '.') {
		return false
	}
	for _, c := range name {
		if c == '/' || c == 0 {
			return false
		}
	}
	return true
}

// close unmaps the log and closes its file (the helper keeps its own copy).
func (l *nodeLog) close() {
	l.compacted.Wait()
	l.unmap()
	unix.Close(l.fd)
}

// unmap unmaps the log (its file stays open: another mapping's).
func (l *nodeLog) unmap() { _ = unix.Munmap(l.mem) }
