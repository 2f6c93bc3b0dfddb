package nodes

import (
	"slices"
	"sort"
)

// maxRangesPerOwner bounds the disjoint ranges one owner holds on one file. Each costs the daemon (and the
// kernel, on the owner's descriptor) a little memory and a little time on every later lock of the owner, under
// the lock table's one mutex: unbounded, one process read-locking every other byte of a file made each lock
// cost more than the last, for every session. Past it, a lock or an unlock that would split a range is refused
// with ENOLCK, as the kernel answers when its lock table is out of room. Locks that merge with what is held, or
// free whole ranges, are still taken.
const maxRangesPerOwner = 1024

// byteRanges is the set of bytes an owner holds locked on one file, whatever the lock's type: the daemon keeps
// an owner's descriptor only while it is not empty. Each range is [start, end], both included, as FUSE gives
// them; a lock to the end of the file ends at the largest offset. They are kept sorted, apart and not adjacent,
// so a change finds the ranges it touches by binary search and moves at most the ranges after them.
type byteRanges []byteRange

type byteRange struct{ start, end uint64 }

func (r byteRanges) empty() bool { return len(r) == 0 }

// touched is the ranges [i, j) that [start, end] overlaps or is adjacent to.
func (r byteRanges) touched(start, end uint64) (int, int) {
	i := sort.Search(len(r), func(k int) bool { return start == 0 || r[k].end >= start-1 })
	j := sort.Search(len(r), func(k int) bool { return end != ^uint64(0) && r[k].start > end+1 })
	return i, j
}

// lenAfterAdd is how many ranges there would be once [start, end] is added.
func (r byteRanges) lenAfterAdd(start, end uint64) int {
	if end < start {
		return len(r)
	}
	i, j := r.touched(start, end)
	return len(r) - (j - i) + 1
}

// add marks [start, end] held, merging it with the ranges it touches (POSIX merges adjacent locks too, but the
// set of bytes held is all that is asked of it).
func (r *byteRanges) add(start, end uint64) {
	if end < start {
		return
	}
	i, j := r.touched(start, end)
	if i < j {
		start, end = min(start, (*r)[i].start), max(end, (*r)[j-1].end)
	}
	*r = slices.Replace(*r, i, j, byteRange{start, end})
}

// cut is what freeing [start, end] does: the ranges [i, j) it overlaps give way to the n pieces of them it leaves.
func (r byteRanges) cut(start, end uint64) (i, j int, pieces [2]byteRange, n int) {
	i = sort.Search(len(r), func(k int) bool { return r[k].end >= start })
	j = sort.Search(len(r), func(k int) bool { return r[k].start > end })
	if i < j && r[i].start < start {
		pieces[n] = byteRange{r[i].start, start - 1}
		n++
	}
	if i < j && r[j-1].end > end {
		pieces[n] = byteRange{end + 1, r[j-1].end}
		n++
	}
	return i, j, pieces, n
}

// lenAfterRemove is how many ranges there would be once [start, end] is freed.
func (r byteRanges) lenAfterRemove(start, end uint64) int {
	if end < start {
		return len(r)
	}
	i, j, _, n := r.cut(start, end)
	return len(r) - (j - i) + n
}

// remove marks [start, end] free, splitting a range it cuts through.
func (r *byteRanges) remove(start, end uint64) {
	if end < start {
		return
	}
	i, j, pieces, n := r.cut(start, end)
	if i == j {
		return
	}
	*r = slices.Replace(*r, i, j, pieces[:n]...)
	if len(*r) == 0 {
		*r = nil
	}
}
