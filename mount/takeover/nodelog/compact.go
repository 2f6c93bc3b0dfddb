package nodelog

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The node log is compacted, never full: records of nodes the kernel forgot pile up (every LOOKUP of a new name
// and its FORGET), and a log that filled lost every node looked up after, to a daemon taking over. Once the log
// passes a mark (compactMark), a compaction writes what it holds live (the nodes the kernel holds with their
// counts and backings, the file handles' high-water mark) into the other half of the file, and then makes that
// half the log with one store in the header. The holder holds the one file, so at every instant it holds a whole
// log: until the store, the half it names is the old one, whole, with every record appended meanwhile; from it,
// the new one, whole. A daemon killed during a compaction leaves the old half named; the next one clears the other
// half before it compacts into it. No descriptor passes: a confined daemon sends none to its holder.
//
// The records are read and written out while the daemon serves on (appends go on into the old half); only the
// switch holds appends back (switching alone): it copies the records appended since the read, moves each count
// and backing to its new place, and stores the header. Its pause grows with the nodes the kernel holds, not with
// the records the log had (compactStats; Churn measures it).

// compactMark is how far into a half of half bytes a record starts a compaction, when the last one left live
// bytes: compactFloor (a quarter of a smaller half), or twice what it left (so a compaction frees at least as much
// as it writes), and never past three quarters (the rest is room for records appended while it runs).
func compactMark(half, live int64) int64 {
	return min(max(min(compactFloor, half/4), 2*live), half/4*3)
}

// compactFloor is the least a log grows to before it is compacted. The log's pages are the daemon's memory (the
// holder's file): a floor of a quarter of the half (16 MiB) let a walk of 10,000 sessions leave 12 MiB of records
// of nodes the kernel had forgotten long before, beside 3 MiB of live ones.
const compactFloor = 1 << 20

// compactStats is what the compactions of this process did.
type compactStats struct {
	mu       sync.Mutex
	count    int
	longest  time.Duration // the longest switch (appends held back)
	switches time.Duration // all switches
	waits    int           // appends that found the log full and waited for a compaction
	waited   time.Duration
}

// compactStep, when set (tests), is called at each step of a compaction: one that never returns stands for the
// daemon killed there.
var compactStep func(step string)

func step(name string) {
	if compactStep != nil {
		compactStep(name)
	}
}

// compact moves the log into the other half (the caller set l.compacts).
func (l *Log) compact() {
	defer func() {
		l.compactMu.Lock()
		l.compacts.Store(false)
		l.compactEnd.Broadcast()
		l.compactMu.Unlock()
	}()
	l.switching.Lock() // every record before upTo is whole
	from, upTo := l.base, min(l.next.Load(), l.end)
	l.switching.Unlock()
	to := halvesAt + (1-(from-halvesAt)/l.half)*l.half
	if !l.clean[l.which(to)] { // a compaction killed before it switched may have left records there
		l.removeHalf(to)
	}
	step("cleared")
	st := newLogScan()
	if _, err := l.scan(st, from, upTo); err != nil {
		l.compactFailed(err)
		return
	}
	w := &halfWriter{mem: l.mem, at: to, end: to + l.half}
	counts, backings := map[int64]int64{}, map[int64]int64{} // new places by old ones
	for _, at := range st.held {
		w.copy(l.mem[at.named : at.named+l.recordSize(at.named)])
		if at.renaming != 0 {
			w.copy(l.mem[at.renaming : at.renaming+l.recordSize(at.renaming)])
		}
	}
	for id, off := range st.counts {
		counts[off] = w.write(kindCount, id, l.load(off+recParent), 0, "")
	}
	for id, off := range st.backings {
		if backing := l.load(off + recParent); backing != 0 {
			backings[off] = w.write(kindBacking, id, backing, l.load(off+recIno), "")
		}
	}
	if st.handles != 0 {
		w.write(kindHandles, uint64(st.handles), 0, 0, "")
	}
	// The records appended meanwhile, copied as they are while appends go on, until few are left for the switch.
	copied := upTo
	for range 8 {
		whole := l.wholeUpTo(copied)
		if whole-copied < catchUpLeft {
			break
		}
		w.copy(l.mem[copied:whole])
		copied = whole
	}
	step("written")
	if w.failed {
		l.compactFailed(errTooLive)
		return
	}
	if !l.compactSwitch(upTo, copied, to, w, counts, backings) {
		return
	}
	step("switched")
	// Its pages given back: kept, they stayed the daemon's memory for good (as much as the log ever grew to: 12
	// MiB after a walk of 10,000 sessions). The next compaction faults them in again: ~10 µs a page of ~40
	// records on this VM, which took a record from 116 ns to 169-241 ns (make bench's churn of 1M lookups),
	// next to the tens of microseconds of the FUSE lookup each record notes.
	l.removeHalf(from)
	l.clean[l.which(from)], l.clean[l.which(to)] = true, false
}

// which is the half (0, 1) at base.
func (l *Log) which(base int64) int { return int((base - halvesAt) / l.half) }

// catchUpLeft is how many bytes of records appended during a compaction are left for its switch to copy.
const catchUpLeft = 64 << 10

// wholeUpTo is where the whole records from off on end (a record being written, or none).
func (l *Log) wholeUpTo(off int64) int64 {
	for last := min(l.next.Load(), l.end); off+recordFixed <= last; {
		size := l.recordSize(off)
		if size == 0 || off+size > last {
			break
		}
		off += size
	}
	return off
}

// compactSwitch, with appends held back, copies the records appended since copied after what w wrote (which ends
// with those from upTo to copied), moves each count and backing record the daemon writes in place to its new place
// (counts and backings: new places by old ones, of the records before upTo), and makes half to the log.
func (l *Log) compactSwitch(upTo, copied, to int64, w *halfWriter, counts, backings map[int64]int64) bool {
	l.switching.Lock()
	defer l.switching.Unlock()
	began := time.Now()
	tail := l.wholeUpTo(copied) // every record is whole now (one that did not fit left nothing)
	shift := w.at - copied      // the records from upTo on are where they were, shifted by as much
	w.copy(l.mem[copied:tail])
	moved := func(places map[uint64]int64, newPlace map[int64]int64, kind uint8, fields ...int64) map[uint64]int64 {
		out := make(map[uint64]int64, len(places))
		for id, off := range places {
			at, ok := newPlace[off]
			if off >= upTo {
				at, ok = off+shift, off < tail
			}
			if !ok {
				at = w.write(kind, id, l.load(off+recParent), l.load(off+recIno), "")
			}
			if at < 0 {
				continue
			}
			for _, f := range fields {
				l.store(at+f, l.load(off+f))
			}
			out[id] = at
		}
		return out
	}
	l.countMu.Lock()
	newCounts := moved(l.counts, counts, kindCount, recParent)
	newBackings := moved(l.backings, backings, kindBacking, recParent, recIno)
	if w.failed {
		l.countMu.Unlock()
		l.mark = l.end
		l.compactFailedLocked(errTooLive)
		return false
	}
	l.counts, l.backings = newCounts, newBackings
	l.countMu.Unlock()
	step("copied")
	which := uint32((to - halvesAt) / l.half)
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&l.mem[headerActive])), which) // the switch: the holder's log is the new half
	atomic.AddUint32((*uint32)(unsafe.Pointer(&l.mem[headerCompactions])), 1)
	l.use(int(which), w.at, w.at-to)
	took := time.Since(began)
	l.stats.mu.Lock()
	l.stats.count++
	l.stats.longest = max(l.stats.longest, took)
	l.stats.switches += took
	l.stats.mu.Unlock()
	return true
}

// errTooLive: the nodes the kernel holds do not fit in a half.
var errTooLive = fmt.Errorf("what the kernel holds does not fit in half the node log")

// awaitCompaction waits for the compaction under way to end: appends that found the log full go on in the half
// it switched to (or find the log full, and drop their records, if it could not switch).
func (l *Log) awaitCompaction() {
	began := time.Now()
	l.compactMu.Lock()
	for l.compacts.Load() {
		l.compactEnd.Wait()
	}
	l.compactMu.Unlock()
	l.stats.mu.Lock()
	l.stats.waits++
	l.stats.waited += time.Since(began)
	l.stats.mu.Unlock()
}

// compactFailed says why a compaction did not switch: the log stays where it is, is not compacted again, and
// fills.
func (l *Log) compactFailed(err error) {
	l.switching.Lock()
	defer l.switching.Unlock()
	l.mark = l.end
	l.compactFailedLocked(err)
}

func (l *Log) compactFailedLocked(err error) {
	l.full.Do(func() {
		fmt.Fprintf(os.Stderr, "sessionfs: the node log is not compacted: %v: once it is full, files looked up are lost to a restarted daemon\n", err)
	})
}

// removeHalf zeroes the half at base and gives its pages back.
func (l *Log) removeHalf(base int64) {
	half := l.mem[base : base+l.half]
	if unix.Madvise(half, unix.MADV_REMOVE) == nil {
		return
	}
	if unix.Fallocate(l.fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, base, l.half) == nil {
		return
	}
	clear(half)
}

// Compactions is how often the log was compacted, by any daemon that wrote it.
func (l *Log) Compactions() uint32 {
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&l.mem[headerCompactions])))
}

// halfWriter appends records to a half that is not the log yet.
type halfWriter struct {
	mem     []byte
	at, end int64
	failed  bool // a record did not fit
}

// write appends a record and returns where (-1: it did not fit).
func (w *halfWriter) write(kind uint8, id, parent, ino uint64, name string) int64 {
	size := recordSizeOf(len(name))
	if w.at+size > w.end {
		w.failed = true
		return -1
	}
	off := w.at
	writeRecord(w.mem[off:off+size], kind, id, parent, ino, name)
	w.at += size
	return off
}

// copy appends whole records as they are, a word at a time: a count or a backing in them may be written meanwhile
// (the switch copies those again).
func (w *halfWriter) copy(recs []byte) {
	if w.at+int64(len(recs)) > w.end {
		w.failed = true
		return
	}
	for i := 0; i < len(recs); i += 8 {
		word := atomic.LoadUint64((*uint64)(unsafe.Pointer(&recs[i])))
		*(*uint64)(unsafe.Pointer(&w.mem[w.at+int64(i)])) = word
	}
	w.at += int64(len(recs))
}
