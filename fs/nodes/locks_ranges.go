package nodes

import "slices"

// byteRanges is the set of bytes an owner holds locked on one file, whatever the lock's type: the daemon keeps
// an owner's descriptor only while it is not empty. Each range is [start, end], both included, as FUSE gives
// them; a lock to the end of the file ends at the largest offset.
type byteRanges []byteRange

type byteRange struct{ start, end uint64 }

func (r byteRanges) empty() bool { return len(r) == 0 }

// add marks [start, end] held, merging it with the ranges it touches (POSIX merges adjacent locks too, but the
// set of bytes held is all that is asked of it).
func (r *byteRanges) add(start, end uint64) {
	if end < start {
		return
	}
	var out byteRanges
	placed := false
	for _, x := range *r {
		switch {
		case start > 0 && x.end < start-1: // wholly before, not adjacent
			out = append(out, x)
		case x.start > end && (end == ^uint64(0) || x.start > end+1): // wholly after, not adjacent
			if !placed {
				out = append(out, byteRange{start, end})
				placed = true
			}
			out = append(out, x)
		default: // overlaps or touches: absorbed
			start, end = min(start, x.start), max(end, x.end)
		}
	}
	if !placed {
		out = append(out, byteRange{start, end})
	}
	*r = out
}

// remove marks [start, end] free, splitting a range it cuts through.
func (r *byteRanges) remove(start, end uint64) {
	if end < start {
		return
	}
	var out byteRanges
	for _, x := range *r {
		if x.end < start || x.start > end {
			out = append(out, x)
			continue
		}
		if x.start < start {
			out = append(out, byteRange{x.start, start - 1})
		}
		if x.end > end {
			out = append(out, byteRange{end + 1, x.end})
		}
	}
	*r = slices.Clip(out)
}
