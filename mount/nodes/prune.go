package nodes

import (
	"cmp"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
)

// The kernel keeps an inode for every name it caches, until memory pressure, and go-fuse a node for each: a walk
// of 10,000 sessions would leave ~130,000 of them, ~190 MiB of daemon memory. Past a limit, the pruner asks the
// kernel to forget (FUSE_NOTIFY_PRUNE) the names of the sessions used least recently. The kernel drops only what
// nobody uses: open files, working folders and mount points (the binds of exec and run) keep theirs, and what it
// drops is looked up again when next used.

// DefaultMaxNodes is how many nodes a mount keeps before it prunes: about 50 MiB of daemon memory.
const DefaultMaxNodes = 32768

const (
	pruneEvery = 250 * time.Millisecond
	// pruneIdle spares sessions used this recently: pruning what is in use only makes it looked up again.
	pruneIdle = 5 * time.Second
	// pruneBatch bounds one notification's size.
	pruneBatch = 512
	// freeAfter is how long after the last prune the daemon returns freed memory to the system.
	freeAfter = time.Second
)

// nodeAdded and nodeForgotten count the live nodes of the sessions.
func (t *Tree) nodeAdded()     { t.live.Add(1) }
func (t *Tree) nodeForgotten() { t.live.Add(-1) }

// touch records that session id was used now.
func (t *Tree) touch(id string) {
	now := time.Now().UnixNano()
	if v, ok := t.lastUse.Load(id); ok {
		v.(*atomic.Int64).Store(now)
		return
	}
	v := new(atomic.Int64)
	v.Store(now)
	t.lastUse.Store(id, v)
}

func (t *Tree) lastUsed(id string) int64 {
	if v, ok := t.lastUse.Load(id); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

// Prune keeps the live nodes under max until done is closed, by pruning the least recently used sessions under
// the sessions folder. max <= 0 never prunes.
func (t *Tree) Prune(sessions *fs.Inode, max int64, done <-chan struct{}) {
	if max <= 0 {
		return
	}
	tick := time.NewTicker(pruneEvery)
	defer tick.Stop()
	var pruned time.Time // when nodes were last pruned and their memory not yet handed back
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			if over := t.live.Load() - max; over > 0 {
				n := t.pruneOnce(sessions, over+max/4)
				if n == 0 {
					return // the kernel cannot prune (older than 6.18): stop asking
				}
				if n > 0 {
					pruned = time.Now()
				}
			} else if !pruned.IsZero() && time.Since(pruned) >= freeAfter {
				// The kernel has forgotten the pruned nodes by now: hand their memory back to the system rather
				// than keep it for a walk that may never come again.
				debug.FreeOSMemory()
				pruned = time.Time{}
			}
		}
	}
}

// pruneOnce asks the kernel to forget about want nodes of the idlest sessions. It returns how many it asked about
// (-1 when nothing was idle), 0 when the kernel does not support pruning.
func (t *Tree) pruneOnce(sessions *fs.Inode, want int64) int {
	type idle struct {
		id string
		in *fs.Inode
		at int64
	}
	cutoff := time.Now().Add(-pruneIdle).UnixNano()
	var cands []idle
	for id, in := range sessions.Children() {
		if at := t.lastUsed(id); at < cutoff {
			cands = append(cands, idle{id, in, at})
		}
	}
	if len(cands) == 0 {
		return -1
	}
	slices.SortFunc(cands, func(a, b idle) int { return cmp.Compare(a.at, b.at) })
	var nodes []*fs.Inode
	for _, c := range cands {
		nodes = postOrder(c.in, nodes)
		if int64(len(nodes)) >= want {
			break
		}
	}
	asked := len(nodes)
	for len(nodes) > 0 {
		n := min(len(nodes), pruneBatch)
		if errno := sessions.NotifyPrune(nodes[:n]); errno != 0 {
			return 0
		}
		nodes = nodes[n:]
	}
	return asked
}

// postOrder appends in's subtree to nodes, children before their folder, so the kernel can drop a folder whose
// entries it dropped just before.
func postOrder(in *fs.Inode, nodes []*fs.Inode) []*fs.Inode {
	for _, ch := range in.Children() {
		nodes = postOrder(ch, nodes)
	}
	return append(nodes, in)
}
