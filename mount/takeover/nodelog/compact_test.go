package nodelog

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// smallHalf makes a log fill after about 600 nodes looked up and forgotten.
const smallHalf = 16 * pageSize

// heldNodes names 40 nodes the kernel holds, with counts, a backing, a rename begun and the handles' mark, and
// returns them as a reader should find them.
func heldNodes(l *Log) []gofs.RecordedNode {
	var want []gofs.RecordedNode
	for i := range uint64(40) {
		id := 1000 + i
		l.Counted(id, i+1)
		l.Named(id, 1, fmt.Sprintf("held%d", i), 500+i)
		want = append(want, gofs.RecordedNode{ID: id, Parent: 1, Name: fmt.Sprintf("held%d", i), Ino: 500 + i, Lookups: i + 1})
	}
	l.Backing(1003, 9, 2)
	want[3].Backing, want[3].Refs = 9, 2
	l.Renaming(1005, 2, "renamed")
	want[5].AltParent, want[5].AltName = 2, "renamed"
	l.Handles(4096)
	return want
}

// churnNodes looks up and forgets n nodes from ids on (four records each), and counts the held nodes up and down
// meanwhile (in place): they end as heldNodes counted them.
func churnNodes(l *Log, ids *atomic.Uint64, n int) {
	for range n {
		id := ids.Add(1)
		l.Named(id, 1, "a-file-looked-up-and-forgotten.jsonl", 0)
		l.Counted(id, 1)
		held := 1000 + id%40
		l.Counted(held, held-1000+2)
		l.Counted(held, held-1000+1)
		l.Counted(id, 0)
		l.Forgot(id)
	}
}

// readAgain reads the log as the next daemon would: from its own mapping of the holder's file.
func readAgain(t *testing.T, l *Log) ([]gofs.RecordedNode, uint32) {
	t.Helper()
	again, err := mapAs(l.fd, unix.PROT_READ)
	require.NoError(t, err)
	defer again.Unmap()
	nodes, handles, err := again.Read()
	require.NoError(t, err)
	return sortedNodes(nodes), handles
}

// The log is compacted as it passes its mark: churned 100 times its capacity from 4 goroutines, it keeps every
// node the kernel holds (with its count, backing, pending rename, and the handles' mark) and never fills.
func TestNodeLogCompactsUnderChurn(t *testing.T) {
	l, err := newSized(smallHalf)
	require.NoError(t, err)
	defer l.Close()
	want := heldNodes(l)
	var ids atomic.Uint64
	ids.Store(1 << 20)
	perNode := int64(4 * 48) // about: a name, a count, a forget
	n := int(100 * smallHalf / perNode / 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { churnNodes(l, &ids, n) })
	}
	wg.Wait()
	l.compacted.Wait()
	nodes, handles := readAgain(t, l)
	assert.Equal(t, want, nodes, "every node the kernel holds, as last counted")
	assert.Equal(t, uint32(4096), handles)
	t.Logf("%d nodes looked up and forgotten (%d bytes of records, %d times a half): %d compactions, the longest switch %v",
		4*n, int64(4*n)*perNode, int64(4*n)*perNode/smallHalf, l.Compactions(), l.stats.longest)
	assert.Greater(t, l.Compactions(), uint32(50))
	assert.Less(t, l.next.Load()-l.base, l.half, "not full")

	used := l.next.Load()
	l.Counted(1000, 77)
	assert.Equal(t, used, l.next.Load(), "a count of a node written out by a compaction is counted in its new place")
	nodes, _ = readAgain(t, l)
	assert.Equal(t, uint64(77), nodes[0].Lookups)
}

// A daemon killed at any step of a compaction leaves its holder a whole log: the old half until the switch, the
// new one from it. The next daemon reads it, and compacts on from there (over what the killed one left in the
// other half). The kill is the daemon frozen at that step, no record half written: its compaction stops there and
// holds every append back (a write that a kill cuts short is the length-last record's: read as the end).
func TestNodeLogKilledMidCompaction(t *testing.T) {
	for _, at := range []string{"cleared", "written", "copied", "switched"} {
		t.Run(at, func(t *testing.T) {
			l, err := newSized(smallHalf) // left mapped and open: the killed daemon's, frozen
			require.NoError(t, err)
			want := heldNodes(l)
			killed := make(chan struct{})
			compactStep = func(step string) {
				if step != at {
					return
				}
				if step != "copied" { // the switch holds appends back already
					l.switching.Lock()
				}
				close(killed)
				select {} // for good
			}
			var ids atomic.Uint64
			ids.Store(1 << 20)
			go churnNodes(l, &ids, 1<<20) // past the mark: a compaction starts, and stops at its step
			<-killed
			compactStep = nil
			nodes, handles := readAgain(t, l)
			assertHolds(t, want, nodes, "killed after "+at)
			assert.Equal(t, uint32(4096), handles)

			next, err := Map(l.fd) // the next daemon
			require.NoError(t, err)
			defer next.Unmap()
			_, _, err = next.Read()
			require.NoError(t, err)
			before := next.Compactions()
			var nextIDs atomic.Uint64
			nextIDs.Store(1 << 40)
			churnNodes(next, &nextIDs, 2000)
			next.compacted.Wait()
			assert.Greater(t, next.Compactions(), before+3)
			nodes, _ = readAgain(t, l)
			assertHolds(t, want, nodes, "the next daemon compacted on")
		})
	}
}

// assertHolds checks that nodes are want as a daemon killed in a churn left them: its last churned node may be
// held still (named, not forgotten yet), and a held node's count may be one up (between churnNodes' two counts).
func assertHolds(t *testing.T, want, nodes []gofs.RecordedNode, msg string) {
	t.Helper()
	var churned []gofs.RecordedNode
	got := map[uint64]gofs.RecordedNode{}
	for _, n := range nodes {
		if n.ID >= 1<<20 {
			churned = append(churned, n)
		} else {
			got[n.ID] = n
		}
	}
	assert.LessOrEqual(t, len(churned), 1, "%s: nodes looked up and forgotten: %v", msg, churned)
	require.Len(t, got, len(want), msg)
	for _, w := range want {
		g := got[w.ID]
		if g.Lookups == w.Lookups+1 {
			g.Lookups = w.Lookups
		}
		assert.Equal(t, w, g, msg)
	}
}
