package travel

import (
	"context"
	"sort"

	"golang.org/x/sys/unix"
)

// found is what a walk of a session found to copy (an export or a fork): its entries and their counts, the total
// a progress bar is measured against.
type found struct {
	entries []walked
	total   Counts
}

// add counts an entry the walk met.
func (f *found) add(rel string, st *unix.Stat_t) {
	f.entries = append(f.entries, walked{rel, *st})
	f.total.Files++
	if st.Mode&unix.S_IFMT == unix.S_IFREG {
		f.total.Bytes += st.Size
	}
}

// sortFrom sorts the entries from index i on by name, which puts every folder before what it holds (a name sorts
// before the names it prefixes).
func (f *found) sortFrom(i int) {
	rest := f.entries[i:]
	sort.Slice(rest, func(a, b int) bool { return rest[a].rel < rest[b].rel })
}

// copyEach copies the entries in order with copy, telling progress (when set) what is done after each. Cancelling
// ctx stops it between two entries: cancelled is then true and err ctx's error, as is.
func (f *found) copyEach(ctx context.Context, copy func(rel string, st *unix.Stat_t) error, done *Counts, progress func(done, total Counts)) (cancelled bool, err error) {
	for _, e := range f.entries {
		if err := ctx.Err(); err != nil {
			return true, err
		}
		if err := copy(e.rel, &e.st); err != nil {
			return false, err
		}
		if progress != nil {
			progress(*done, f.total)
		}
	}
	return false, nil
}
