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
// The file is a header (nodeLogMagic, the version) and records, each 8-byte aligned: a length (uint32, stored last
// and atomically: a record cut off by a kill reads as the end), a kind and the name's length, the node id, the
// parent's (or a number the kind says), the inode number, the name. A node's lookup count is one record that is
// written over in place as the count changes (nodeCount), so that a restored node is freed by the kernel's FORGETs. The
// process that reads it trusts nothing in it: a confined daemon that a session subverted wrote it. Names are
// checked as a FUSE request's are, and each is only looked up beneath its parent, as a request would be.

const (
	nodeLogMagic = 0x73666e6c // "sfnl"
	// 5: an exchange's inodes in the ring of changes, which moved the passthrough bits (read: this version only);
	// 4: the passthrough handles and backing refs; 3: the ring of changes (nodelog_changes.go); 2: lookup counts
	// (nodeCount)
	nodeLogVersion = 5
	nodeLogHeader  = 16
	// nodeLogSize bounds the log: 64 MiB of address space, paged in as written (about 40 bytes a node).
	nodeLogSize = 64 << 20

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
	next atomic.Int64
	full sync.Once

	countMu  sync.Mutex
	counts   map[uint64]int64 // each node id's count record: where its lookup count is kept
	backings map[uint64]int64 // each node id's backing record, while it has a backing id
}

// newNodeLog makes an empty log in a new memory file.
func newNodeLog() (*nodeLog, error) {
	fd, err := unix.MemfdCreate("sessionfs-nodes", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("make the node log: %w", err)
	}
	if err := unix.Ftruncate(fd, nodeLogSize); err != nil {
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
	l.next.Store(nodeLogHeader)
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
	if st.Size != nodeLogSize {
		return nil, fmt.Errorf("the node log is %d bytes, not %d", st.Size, nodeLogSize)
	}
	mem, err := unix.Mmap(fd, 0, nodeLogSize, prot, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map the node log: %w", err)
	}
	return &nodeLog{fd: fd, mem: mem, counts: map[uint64]int64{}, backings: map[uint64]int64{}}, nil
}

// Named records that the kernel holds node id (inode ino), looked up as name in parent.
func (l *nodeLog) Named(id, parent uint64, name string, ino uint64) {
	l.append(nodeNamed, id, parent, ino, name)
}

// Renaming records that node id is about to be renamed to name in parent.
func (l *nodeLog) Renaming(id, parent uint64, name string) {
	l.append(nodeRenaming, id, parent, 0, name)
}

// Forgot records that the kernel let node id go.
func (l *nodeLog) Forgot(id uint64) { l.append(nodeForgot, id, 0, 0, "") }

// Handles records that no file handle at or past upTo was handed out yet.
func (l *nodeLog) Handles(upTo uint32) { l.append(nodeHandles, uint64(upTo), 0, 0, "") }

// Backing records node id's passthrough backing id (0: closed) and how many open files use it, in one record per
// node written over in place, as its lookup count.
func (l *nodeLog) Backing(id uint64, backing int32, refs int) {
	l.countMu.Lock()
	defer l.countMu.Unlock()
	off, ok := l.backings[id]
	if !ok {
		if backing != 0 {
			if off = l.append(nodeBacking, id, uint64(uint32(backing)), uint64(max(refs, 0)), ""); off >= 0 {
				l.backings[id] = off
			}
		}
		return
	}
	if backing == 0 {
		delete(l.backings, id) // registered again, it gets a record of its own
	}
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&l.mem[off+24])), uint64(max(refs, 0)))
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&l.mem[off+16])), uint64(uint32(backing)))
}

// Counted records node id's lookup count. A node's count is one record, written over in place (a store of 8
// bytes, no system call): the first count appends it.
func (l *nodeLog) Counted(id, count uint64) {
	l.countMu.Lock()
	off, ok := l.counts[id]
	switch {
	case !ok && count == 0:
	case !ok:
		if off = l.append(nodeCount, id, count, 0, ""); off >= 0 {
			l.counts[id] = off
		}
	case count == 0:
		delete(l.counts, id) // Forgot follows; a node id handed out again gets a record of its own
		fallthrough
	default:
		atomic.StoreUint64((*uint64)(unsafe.Pointer(&l.mem[off+16])), count)
	}
	l.countMu.Unlock()
}

var _ gofs.NodeLog = (*nodeLog)(nil)

// append appends a record and returns where (-1: the log is full).
func (l *nodeLog) append(kind uint8, id, parent, ino uint64, name string) int64 {
	size := int64(nodeRecordFixed+len(name)+7) &^ 7
	off := l.next.Add(size) - size
	if off+size > appendEnd {
		l.full.Do(func() {
			fmt.Fprintln(os.Stderr, "sessionfs: the node log is full: files looked up from now on are lost to a restarted daemon")
		})
		return -1
	}
	rec := l.mem[off : off+size]
	binary.LittleEndian.PutUint32(rec[4:], uint32(kind)|uint32(len(name))<<8)
	binary.LittleEndian.PutUint64(rec[8:], id)
	binary.LittleEndian.PutUint64(rec[16:], parent)
	binary.LittleEndian.PutUint64(rec[24:], ino)
	copy(rec[nodeRecordFixed:], name)
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&rec[0])), uint32(size)) // last: the record is whole
	return off
}

// errNodeLog: the log is not one this build reads.
var errNodeLog = fmt.Errorf("the node log is not sessionfs's of version %d", nodeLogVersion)

// read reads the nodes the kernel holds (the last name each was given, those forgotten left out) and the file
// handles' high-water mark, and sets the log to append after its last whole record.
func (l *nodeLog) read() (nodes []gofs.RecordedNode, handles uint32, err error) {
	if v := binary.LittleEndian.Uint32(l.mem[4:]); binary.LittleEndian.Uint32(l.mem[0:]) != nodeLogMagic || v != nodeLogVersion {
		return nil, 0, errNodeLog
	}
	held := map[uint64]gofs.RecordedNode{}
	counts, backings := map[uint64]int64{}, map[uint64]int64{}
	off := int64(nodeLogHeader)
	for off+nodeRecordFixed <= appendEnd {
		size := int64(atomic.LoadUint32((*uint32)(unsafe.Pointer(&l.mem[off]))))
		if size == 0 {
			break
		}
		if size < nodeRecordFixed || size%8 != 0 || off+size > appendEnd {
			return nil, 0, fmt.Errorf("the node log has a record of %d bytes at %d", size, off)
		}
		rec := l.mem[off : off+size]
		kindLen := binary.LittleEndian.Uint32(rec[4:])
		kind, n := uint8(kindLen), int64(kindLen>>8)
		id, parent, ino := binary.LittleEndian.Uint64(rec[8:]), binary.LittleEndian.Uint64(rec[16:]), binary.LittleEndian.Uint64(rec[24:])
		var name string
		if nodeRecordFixed+n <= size {
			name = string(rec[nodeRecordFixed : nodeRecordFixed+n])
		}
		switch {
		case kind == nodeForgot:
			delete(held, id)
			delete(counts, id)
			delete(backings, id)
		case kind == nodeCount:
			counts[id] = off
		case kind == nodeHandles:
			if id <= math.MaxUint32 {
				handles = max(handles, uint32(id))
			}
		case kind == nodeBacking:
			backings[id] = off // the last one's (one written over in place; a log of version 1 or 2 appends)
		case kind == nodeNamed && validEntryName(name):
			held[id] = gofs.RecordedNode{ID: id, Parent: parent, Name: name, Ino: ino}
		case kind == nodeRenaming && validEntryName(name):
			if r, ok := held[id]; ok {
				r.AltParent, r.AltName = parent, name
				held[id] = r
			}
		case kind == nodeNamed || kind == nodeRenaming: // a name no request could carry: left out
		default:
			return nil, 0, fmt.Errorf("the node log has a record of kind %d at %d", kind, off)
		}
		off += size
	}
	l.next.Store(off)
	nodes = make([]gofs.RecordedNode, 0, len(held))
	for id, r := range held {
		if at, ok := counts[id]; ok {
			r.Lookups = atomic.LoadUint64((*uint64)(unsafe.Pointer(&l.mem[at+16])))
		}
		if at, ok := backings[id]; ok {
			backing := atomic.LoadUint64((*uint64)(unsafe.Pointer(&l.mem[at+16])))
			refs := atomic.LoadUint64((*uint64)(unsafe.Pointer(&l.mem[at+24])))
			if backing <= math.MaxInt32 && refs <= math.MaxInt32 {
				r.Backing, r.Refs = int32(backing), int(refs)
			}
			if r.Backing == 0 {
				delete(backings, id)
			}
		}
		nodes = append(nodes, r)
	}
	l.countMu.Lock()
	l.counts, l.backings = counts, backings // this process counts on in the same records
	l.countMu.Unlock()
	return nodes, handles, nil
}

// validEntryName is a name a FUSE request could carry: a folder entry's.
func validEntryName(name string) bool {
	if name == "" || name == "." || name == ".." || len(name) > 255 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if name[i] == '/' || name[i] == 0 {
			return false
		}
	}
	return true
}

// close unmaps the log and closes its file (the helper keeps its own copy).
func (l *nodeLog) close() {
	_ = unix.Munmap(l.mem)
	unix.Close(l.fd)
}
