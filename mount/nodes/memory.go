package nodes

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The collector's default (GOGC=100) lets the heap grow to twice what is live before it collects: after a walk of
// 10,000 sessions ~40 MiB of nodes are live (those of the sessions used in the last pruneIdle, which the pruner
// spares), and the heap reaches ~85 MiB. A soft limit holds it to 1.25 times what is live (as GOGC=25 would) once
// past a floor, for about four times the collections while so much is live (1-2% of a core during the walk; none
// more when idle). It follows the live heap, so a daemon that needs more gets more: it never collects without end.

const (
	// MemoryFloor is the daemon's soft memory limit while what is live is small.
	MemoryFloor = 48 << 20
	// memoryTuneEvery is how often the limit follows the live heap while it moves; memoryTuneIdle how often once
	// it is still (an idle daemon wakes for nothing).
	memoryTuneEvery = 250 * time.Millisecond
	memoryTuneIdle  = 8 * time.Second
)

// memoryLimit is the soft limit for a live heap of live bytes and other bytes the runtime holds besides the heap's
// objects (stacks, its metadata, free spans not yet returned): the floor, or room for 1.25 times live past it, but
// never above ceiling (a limit set already: GOMEMLIMIT, the memory cgroup's).
func memoryLimit(live, other, floor, ceiling int64) int64 {
	return min(max(floor, other+live+live/4), ceiling)
}

// heapMetrics are what memoryLimit is given: live is the first, other the second less the rest (the memory limit
// does not count what was returned to the system).
var heapMetrics = []string{"/gc/heap/live:bytes", "/memory/classes/total:bytes", "/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/released:bytes"}

// LimitMemory holds the process's Go memory to a soft limit that follows its live heap (memoryLimit) until done
// is closed, then gives the limit back. A limit set before (GOMEMLIMIT, the memory cgroup's) stays the ceiling.
func LimitMemory(floor int64, done <-chan struct{}) {
	ceiling := debug.SetMemoryLimit(-1)
	if floor <= 0 || floor >= ceiling {
		return
	}
	defer debug.SetMemoryLimit(ceiling)
	samples := make([]metrics.Sample, len(heapMetrics))
	for i, name := range heapMetrics {
		samples[i].Name = name
	}
	set := int64(-1)
	every := memoryTuneEvery
	tick := time.NewTimer(every)
	defer tick.Stop()
	for {
		metrics.Read(samples)
		var v [4]int64
		for i, s := range samples {
			if s.Value.Kind() == metrics.KindUint64 {
				v[i] = int64(min(s.Value.Uint64(), math.MaxInt64))
			}
		}
		other := max(0, v[1]-v[2]-v[3])
		if l := memoryLimit(v[0], other, floor, ceiling); l != set {
			debug.SetMemoryLimit(l)
			set, every = l, memoryTuneEvery
		} else {
			every = min(2*every, memoryTuneIdle)
		}
		tick.Reset(every)
		select {
		case <-done:
			return
		case <-tick.C:
		}
	}
}
