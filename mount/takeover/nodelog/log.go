package nodelog

import (
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

// Log is a node log, mapped: the serving daemon appends to it (go-fuse tells it, as its NodeLog), the one that
// takes over reads it (Read) and appends on, doctor counts it (MapReadOnly).
type Log struct {
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

// New makes an empty log in a new memory file.
func New() (*Log, error) { return newSized(halfSize()) }

// newSized makes an empty log whose halves are half bytes (a multiple of the page size).
func newSized(half int64) (*Log, error) {
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
	l, err := Map(fd)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	writeHeader(l.mem)
	l.use(0, halvesAt, 0)
	l.clean = [2]bool{true, true}
	return l, nil
}

// Map maps the log in fd (the holder's copy: a daemon taking over) to read it and append to it. It becomes the log
// this process writes (Current): the requests that change a folder are noted in it.
func Map(fd int) (*Log, error) {
	l, err := mapAs(fd, unix.PROT_READ|unix.PROT_WRITE)
	if err == nil {
		current.Store(l)
	}
	return l, err
}

// MapReadOnly maps the log in fd to read it (Read, Compactions), never to append: doctor's count of the nodes a
// held mount's kernel holds. Unmap ends it; fd stays the caller's.
func MapReadOnly(fd int) (*Log, error) { return mapAs(fd, unix.PROT_READ) }

// mapAs maps the log in fd with prot.
func mapAs(fd, prot int) (*Log, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	half := (st.Size - halvesAt) / 2
	if st.Size > maxSize || half < pageSize || half%pageSize != 0 || halvesAt+2*half != st.Size {
		return nil, fmt.Errorf("the node log is %d bytes, not two halves of up to %d", st.Size, maxHalf)
	}
	mem, err := unix.Mmap(fd, 0, int(st.Size), prot, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map the node log: %w", err)
	}
	l := &Log{fd: fd, mem: mem, half: half, counts: map[uint64]int64{}, backings: map[uint64]int64{}}
	l.compactEnd = sync.NewCond(&l.compactMu)
	l.use(0, halvesAt, 0)
	return l, nil
}

// use makes half which (0 or 1) the log, appended to at next, with live bytes of it what the last compaction
// left (switching held alone, or no other user yet).
func (l *Log) use(which int, next, live int64) {
	l.base = halvesAt + int64(which)*l.half
	l.end = l.base + l.half
	l.next.Store(next)
	l.live = live
	l.mark = l.base + compactMark(l.half, live)
}

// Named records that the kernel holds node id (inode ino), looked up as name in parent.
func (l *Log) Named(id, parent uint64, name string, ino uint64) {
	l.record(kindNamed, id, parent, ino, name)
}

// Renaming records that node id is about to be renamed to name in parent.
func (l *Log) Renaming(id, parent uint64, name string) {
	l.record(kindRenaming, id, parent, 0, name)
}

// Forgot records that the kernel let node id go.
func (l *Log) Forgot(id uint64) { l.record(kindForgot, id, 0, 0, "") }

// Handles records that no file handle at or past upTo was handed out yet.
func (l *Log) Handles(upTo uint32) { l.record(kindHandles, uint64(upTo), 0, 0, "") }

// record appends a record, once the compaction under way made room when the log is full.
func (l *Log) record(kind uint8, id, parent, ino uint64, name string) {
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
func (l *Log) Backing(id uint64, backing int32, refs int) {
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
func (l *Log) backing(id uint64, backing int32, refs int) (later bool) {
	off, ok := l.backings[id]
	if !ok {
		if backing != 0 {
			if off = l.append(kindBacking, id, uint64(uint32(backing)), uint64(max(refs, 0)), ""); off >= 0 {
				l.backings[id] = off
			}
		}
		return off == appendLater
	}
	if backing == 0 {
		delete(l.backings, id) // registered again, it gets a record of its own
	}
	l.store(off+recIno, uint64(max(refs, 0)))
	l.store(off+recParent, uint64(uint32(backing)))
	return false
}

// Counted records node id's lookup count. A node's count is one record, written over in place (a store of 8
// bytes, no system call): the first count appends it.
func (l *Log) Counted(id, count uint64) {
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
func (l *Log) counted(id, count uint64) (later bool) {
	off, ok := l.counts[id]
	switch {
	case !ok && count == 0:
	case !ok:
		if off = l.append(kindCount, id, count, 0, ""); off >= 0 {
			l.counts[id] = off
		}
		return off == appendLater
	case count == 0:
		delete(l.counts, id) // Forgot follows; a node id handed out again gets a record of its own
		fallthrough
	default:
		l.store(off+recParent, count)
	}
	return false
}

var _ gofs.NodeLog = (*Log)(nil)

func (l *Log) store(off int64, v uint64) {
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&l.mem[off])), v)
}
func (l *Log) load(off int64) uint64 {
	return atomic.LoadUint64((*uint64)(unsafe.Pointer(&l.mem[off])))
}

// appendLater: the log is full and a compaction makes room (awaitCompaction).
const appendLater = -2

// append appends a record and returns where (-1: the log is full; appendLater), switching held shared. The record
// that passes the mark starts a compaction (compact.go).
func (l *Log) append(kind uint8, id, parent, ino uint64, name string) int64 {
	size := recordSizeOf(len(name))
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

// errFormat: the log is not one this build reads.
var errFormat = fmt.Errorf("the node log is not sessionfs's of version %d", Version)

// Read reads the nodes the kernel holds (the last name each was given, those forgotten left out; what go-fuse's
// RestoreNodes takes) and the file handles' high-water mark, and sets the log to append after its last whole
// record, its counts and backings written on in their records.
func (l *Log) Read() (nodes []gofs.RecordedNode, handles uint32, err error) {
	if !headerOK(l.mem) {
		return nil, 0, errFormat
	}
	which := atomic.LoadUint32((*uint32)(unsafe.Pointer(&l.mem[headerActive])))
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
			r.Lookups = l.load(at + recParent)
		}
		if at, ok := st.backings[id]; ok {
			backing, refs := l.load(at+recParent), l.load(at+recIno)
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

// Fd is the log's memory file: the helper gets a copy, to hand to the daemon that takes over.
func (l *Log) Fd() int { return l.fd }

// Close unmaps the log and closes its file (the helper keeps its own copy), once the compaction under way ended.
func (l *Log) Close() {
	l.compacted.Wait()
	l.Unmap()
	unix.Close(l.fd)
}

// Unmap unmaps the log; its file stays open (MapReadOnly's caller's, or another mapping's).
func (l *Log) Unmap() { _ = unix.Munmap(l.mem) }
