package nodelog

import (
	"fmt"
	"slices"
	"time"
)

// ChurnFigures are what keeping the node log costs a daemon that hands out and forgets many node ids (Churn):
// sessionfs-bench's takeover rows.
type ChurnFigures struct {
	Churned, Held int
	PerRecord     time.Duration // a record's cost (a name, a count, a forget: each a copy into shared memory)
	Compactions   int
	// Waits is how many appends found the log full and waited for a compaction to make room (the churn appends
	// faster than a compaction reads: a daemon's requests come far slower), Waited how long in all; PerRecord
	// leaves them out.
	Waits         int
	Waited        time.Duration
	LongestSwitch time.Duration // the longest a compaction held appends back
	MeanSwitch    time.Duration
	// LongestChurn is the longest one node's lookup and forget took to record (a compaction's switch included),
	// P999Churn the 99.9th percentile.
	LongestChurn, P999Churn time.Duration
}

// Churn records held nodes the kernel keeps, then churned nodes looked up and forgotten, in a node log of the size
// a daemon makes, as go-fuse tells a daemon's log of each (named, counted, counted down, forgotten): once untimed
// for the cost of a record, once timing each node for the stalls. The log is compacted as it fills.
func Churn(churned, held int) (ChurnFigures, error) {
	f := ChurnFigures{Churned: churned, Held: held}
	run := func(each func(time.Duration)) (time.Duration, *Log, error) {
		l, err := New()
		if err != nil {
			return 0, nil, err
		}
		for i := range uint64(held) {
			l.Counted(2+i, 1)
			l.Named(2+i, 1, fmt.Sprintf("held-file-%d.jsonl", i), 0)
		}
		began := time.Now()
		last := began
		for i := range uint64(churned) {
			id := uint64(held) + 2 + i
			l.Named(id, 1, "a-typical-file-name.jsonl", 0)
			l.Counted(id, 1)
			l.Counted(id, 0)
			l.Forgot(id)
			if each != nil {
				now := time.Now()
				each(now.Sub(last))
				last = now
			}
		}
		took := time.Since(began)
		l.compacted.Wait()
		return took, l, nil
	}
	took, l, err := run(nil)
	if err != nil {
		return f, err
	}
	l.stats.mu.Lock()
	f.PerRecord = (took - l.stats.waited) / time.Duration(4*max(churned, 1))
	f.Compactions, f.LongestSwitch, f.Waits, f.Waited = l.stats.count, l.stats.longest, l.stats.waits, l.stats.waited
	if l.stats.count > 0 {
		f.MeanSwitch = l.stats.switches / time.Duration(l.stats.count)
	}
	l.stats.mu.Unlock()
	l.Close()
	stalls := make([]time.Duration, 0, churned)
	_, l, err = run(func(d time.Duration) { stalls = append(stalls, d) })
	if err != nil {
		return f, err
	}
	l.Close()
	if len(stalls) > 0 {
		slices.Sort(stalls)
		f.LongestChurn, f.P999Churn = stalls[len(stalls)-1], stalls[len(stalls)*999/1000]
	}
	return f, nil
}
