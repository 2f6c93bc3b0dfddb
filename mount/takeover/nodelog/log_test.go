package nodelog

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sortedNodes(nodes []gofs.RecordedNode) []gofs.RecordedNode {
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	return nodes
}

// A daemon that takes over reads the last name of every node the kernel still holds, and appends after them.
func TestNodeLogReadsWhatTheKernelHolds(t *testing.T) {
	l, err := New()
	require.NoError(t, err)
	defer l.Close()
	l.Named(2, 1, "sessions", 0)
	l.Named(3, 2, "s1", 0)
	l.Named(4, 3, "tmp.json", 0)
	l.Named(4, 3, ".claude.json", 0) // renamed over
	l.Named(5, 3, "gone", 0)
	l.Forgot(5)
	l.Backing(4, 7, 1) // .claude.json open through passthrough
	l.Backing(4, 7, 2) // twice
	l.Named(9, 3, "closed", 0)
	l.Backing(9, 8, 1)
	l.Backing(9, 0, 0)
	l.Named(10, 3, ".c.tmp", 77)
	l.Renaming(10, 3, "c.json") // the daemon died before it said the rename was made
	l.Named(11, 3, ".d.tmp", 78)
	l.Renaming(11, 3, "d.json")
	l.Named(11, 3, "d.json", 78) // made

	again, err := Map(l.fd) // as the next daemon maps the helper's copy
	require.NoError(t, err)
	l.Handles(2048)
	l.Handles(1024) // reported as they grow; the highest holds
	nodes, handles, err := again.Read()
	require.NoError(t, err)
	assert.Equal(t, uint32(2048), handles)
	assert.Equal(t, []gofs.RecordedNode{{ID: 2, Parent: 1, Name: "sessions"}, {ID: 3, Parent: 2, Name: "s1"},
		{ID: 4, Parent: 3, Name: ".claude.json", Backing: 7, Refs: 2}, {ID: 9, Parent: 3, Name: "closed"},
		{ID: 10, Parent: 3, Name: ".c.tmp", Ino: 77, AltParent: 3, AltName: "c.json"},
		{ID: 11, Parent: 3, Name: "d.json", Ino: 78}}, sortedNodes(nodes))

	again.Named(6, 3, "new", 0)
	nodes, _, err = l.Read()
	require.NoError(t, err)
	assert.Len(t, nodes, 7, "appended after the last record")
}

// Each node's lookup count is read as last counted, one record per node however often it changes, and the daemon
// that read the log counts on in the same records.
func TestNodeLogCounts(t *testing.T) {
	l, err := New()
	require.NoError(t, err)
	defer l.Close()
	l.Counted(2, 1) // counted before it is named: go-fuse counts, then logs the name
	l.Named(2, 1, "a", 0)
	for c := uint64(2); c <= 100; c++ {
		l.Counted(2, c)
	}
	l.Counted(2, 40)
	l.Named(3, 1, "b", 0)
	l.Counted(3, 1)
	l.Counted(3, 0)
	l.Forgot(3)
	l.Named(4, 1, "c", 0) // of a build that did not count
	used := l.next.Load()

	again, err := Map(l.fd)
	require.NoError(t, err)
	nodes, _, err := again.Read()
	require.NoError(t, err)
	assert.Equal(t, []gofs.RecordedNode{{ID: 2, Parent: 1, Name: "a", Lookups: 40}, {ID: 4, Parent: 1, Name: "c"}}, sortedNodes(nodes))
	again.Counted(2, 41)
	assert.Equal(t, used, again.next.Load(), "counted in place")
	nodes, _, err = l.Read()
	require.NoError(t, err)
	assert.Equal(t, uint64(41), sortedNodes(nodes)[0].Lookups)
}

// The handles that read and write through a backing file are each a bit, set and cleared as they open and close,
// so that the next daemon knows which RELEASEs count down a restored backing id.
func TestNodeLogPassthroughHandles(t *testing.T) {
	l, err := New()
	require.NoError(t, err)
	defer l.Close()
	for _, fh := range []uint32{1, 63, 64, 1000, passthroughHandles - 1, passthroughHandles} {
		l.Passthrough(fh, true)
	}
	l.Passthrough(1000, false)
	used := l.next.Load()
	again, err := Map(l.fd)
	require.NoError(t, err)
	assert.Equal(t, []uint32{1, 63, 64, passthroughHandles - 1}, again.PassthroughHandles(), "a handle past the bits is not told")
	assert.Equal(t, used, l.next.Load(), "no record appended")
}

// Records appended at once from many goroutines are each whole.
func TestNodeLogConcurrentAppends(t *testing.T) {
	l, err := New()
	require.NoError(t, err)
	defer l.Close()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				id := uint64(g*1000 + i + 2)
				l.Named(id, 1, fmt.Sprintf("f%d", id), id)
			}
		})
	}
	wg.Wait()
	nodes, _, err := l.Read()
	require.NoError(t, err)
	require.Len(t, nodes, 8000)
	for _, n := range nodes {
		assert.Equal(t, fmt.Sprintf("f%d", n.ID), n.Name)
	}
}

// The log is written by a confined daemon a session may have subverted: the next daemon takes only names a
// request could carry, and refuses a log it cannot parse rather than reading past it.
func TestNodeLogHostile(t *testing.T) {
	l, err := New()
	require.NoError(t, err)
	defer l.Close()
	for _, name := range []string{"..", ".", "a/b", "nul\x00", strings.Repeat("x", 256), ""} {
		l.Named(7, 1, name, 0)
	}
	l.Named(8, 1, "ok", 0)
	nodes, _, err := l.Read()
	require.NoError(t, err)
	assert.Equal(t, []gofs.RecordedNode{{ID: 8, Parent: 1, Name: "ok"}}, nodes)

	// A record whose length runs past the log, and one of a kind no build writes.
	off := l.next.Load()
	binary.LittleEndian.PutUint32(l.mem[off+recLength:], uint32(maxSize))
	_, _, err = l.Read()
	assert.ErrorContains(t, err, "a record of")
	binary.LittleEndian.PutUint32(l.mem[off+recLength:], 32)
	binary.LittleEndian.PutUint32(l.mem[off+recKind:], 9)
	_, _, err = l.Read()
	assert.ErrorContains(t, err, "of kind 9")

	binary.LittleEndian.PutUint32(l.mem[headerMagic:], 0)
	_, _, err = l.Read()
	assert.ErrorIs(t, err, errFormat)
}

// BenchmarkNodeLogAppend is what keeping the node ids costs each LOOKUP that hands out a new one, and its FORGET:
// the node named, counted, counted down and forgotten (four records), the log compacted as it passes its mark.
func BenchmarkNodeLogAppend(b *testing.B) {
	l, err := New()
	require.NoError(b, err)
	defer l.Close()
	var ids atomic.Uint64
	ids.Store(1)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := ids.Add(1)
			l.Named(id, 7, "a-typical-file-name.jsonl", 0)
			l.Counted(id, 1)
			l.Counted(id, 0)
			l.Forgot(id)
		}
	})
}
