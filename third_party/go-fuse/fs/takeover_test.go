// Copyright 2026 the Go-FUSE Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package fs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// memNodeLog keeps what a NodeLog is told, as the takeover patch's user keeps it in a memory file.
type memNodeLog struct {
	mu     sync.Mutex
	nodes  map[uint64]RecordedNode
	counts map[uint64]uint64
}

func (l *memNodeLog) Named(id, parent uint64, name string, ino uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nodes[id] = RecordedNode{ID: id, Parent: parent, Name: name, Ino: ino}
}
func (l *memNodeLog) Renaming(id, parent uint64, name string) {}
func (l *memNodeLog) Forgot(id uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.nodes, id)
}
func (l *memNodeLog) Backing(id uint64, backing int32, refs int) {}
func (l *memNodeLog) Passthrough(fh uint32, on bool)             {}
func (l *memNodeLog) Handles(upTo uint32)                        {}
func (l *memNodeLog) Counted(id, count uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts[id] = count
}

func (l *memNodeLog) recorded() []RecordedNode {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []RecordedNode
	for id, r := range l.nodes {
		r.Lookups = l.counts[id]
		out = append(out, r)
	}
	return out
}

func loopbackBridge(t *testing.T, dir string) *rawBridge {
	root, err := NewLoopbackRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	return NewNodeFS(root, &Options{}).(*rawBridge)
}

// A node restored with its recorded lookup count is freed once the kernel's FORGETs bring it to zero, as it would
// have been by the server before: the nodes a new server holds stay what the kernel holds.
func TestRestoredNodeFreedOnForget(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	log := &memNodeLog{nodes: map[uint64]RecordedNode{}, counts: map[uint64]uint64{}}
	before := loopbackBridge(t, dir)
	RecordNodes(before, log)
	var out fuse.EntryOut
	h := &fuse.InHeader{NodeId: fuse.FUSE_ROOT_ID}
	for i := 0; i < 3; i++ { // three LOOKUPs the kernel counts
		if st := before.Lookup(nil, h, "f", &out); !st.Ok() {
			t.Fatal(st)
		}
	}
	before.Forget(out.NodeId, 1)
	id := out.NodeId
	recorded := log.recorded()
	if len(recorded) != 1 || recorded[0].Lookups != 2 {
		t.Fatalf("recorded %+v, want node %d with 2 lookups", recorded, id)
	}

	after := loopbackBridge(t, dir)
	if n, later := RestoreNodes(after, recorded, 0); n != 1 || later != 0 {
		t.Fatalf("restored %d, %d left", n, later)
	}
	RecordNodes(after, log)
	after.Forget(id, 1)
	if e, _ := after.ids.node(id, 0); e == nil {
		t.Fatal("freed with one lookup left")
	}
	after.Forget(id, 1)
	if e, _ := after.ids.node(id, 0); e != nil {
		t.Fatalf("node %d held after the kernel forgot it (lookup count %d)", id, e.lookupCount)
	}
	if len(log.recorded()) != 0 {
		t.Fatalf("the log still holds %+v", log.recorded())
	}
}

// A node the log has no count for (a log of a build before counts) stays until the mount ends.
func TestRestoredNodeWithoutCountStays(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	before := loopbackBridge(t, dir)
	var out fuse.EntryOut
	if st := before.Lookup(nil, &fuse.InHeader{NodeId: fuse.FUSE_ROOT_ID}, "f", &out); !st.Ok() {
		t.Fatal(st)
	}
	after := loopbackBridge(t, dir)
	if n, later := RestoreNodes(after, []RecordedNode{{ID: out.NodeId, Parent: fuse.FUSE_ROOT_ID, Name: "f"}}, 0); n != 1 || later != 0 {
		t.Fatalf("restored %d, %d left", n, later)
	}
	after.Forget(out.NodeId, 5)
	if e, _ := after.ids.node(out.NodeId, 0); e == nil {
		t.Fatal("a node of unknown count freed")
	}
}

// chainRecords makes in dir a chain of depth folders "d" with a file f in the deepest, and the records of a
// server that handed out the chain's ids lower the deeper (as mkdir and mv make them: each node's parent after
// it), with f (id 3) found under the name of a rename begun (its recorded parent, 5, gone) and g (id 4) whose
// parent is gone.
func chainRecords(t *testing.T, dir string, depth int) (recorded []RecordedNode, id func(k int) uint64) {
	p := dir
	for k := depth; k >= 1; k-- { // the deepest folder is node 1's
		p = filepath.Join(p, "d")
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(p, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	id = func(k int) uint64 { return uint64(10 + k) } // c_k's: lower the deeper
	for k := 1; k <= depth; k++ {
		parent := uint64(fuse.FUSE_ROOT_ID)
		if k < depth {
			parent = id(k + 1)
		}
		recorded = append(recorded, RecordedNode{ID: id(k), Parent: parent, Name: "d", Lookups: 1})
	}
	recorded = append(recorded, RecordedNode{ID: 3, Parent: 5, Name: "f", AltParent: id(1), AltName: "f", Lookups: 1},
		RecordedNode{ID: 4, Parent: 6, Name: "g"})
	return recorded, id
}

// restoreWithin runs f with RestoreNodes restoring for at most d before it leaves the rest for later.
func restoreWithin(t *testing.T, d time.Duration) {
	was := eagerRestore
	eagerRestore = d
	t.Cleanup(func() { eagerRestore = was })
}

// A chain of folders each renamed into a newer one (each node's parent has a higher id than the node, as mkdir
// and mv make it) is restored whole, as are a node found under the name of a rename begun (its recorded parent
// gone) and none whose parent is gone: each node's recorded parents are restored before it.
func TestRestoreChainOfRenamedFolders(t *testing.T) {
	restoreWithin(t, time.Minute)
	const depth = 1500 // the loopback file system goes by paths: within PATH_MAX
	dir := t.TempDir()
	recorded, id := chainRecords(t, dir, depth)
	after := loopbackBridge(t, dir)
	n, later := RestoreNodes(after, recorded, 0)
	if n != depth+1 || later != 0 {
		t.Fatalf("restored %d of %d, %d left", n, depth+1, later)
	}
	for _, want := range []uint64{id(1), id(depth), 3} {
		if e, _ := after.ids.node(want, 0); e == nil {
			t.Fatalf("node %d not restored", want)
		}
	}
	if e, _ := after.ids.node(4, 0); e != nil {
		t.Fatal("a node whose parent is gone was restored")
	}
	var out fuse.AttrOut
	if st := after.GetAttr(nil, &fuse.GetAttrIn{InHeader: fuse.InHeader{NodeId: 3}}, &out); !st.Ok() || out.Mode&syscall.S_IFREG == 0 {
		t.Fatalf("node 3: %v, mode %o", st, out.Mode)
	}
}

// Past its bound, RestoreNodes leaves the rest for later: each node is restored, with its parents, when the kernel
// first names it, by id or by name. Requests race to restore the same chain: each node is restored once, under
// its recorded id.
func TestRestoreLater(t *testing.T) {
	restoreWithin(t, 0)
	const depth = 200
	dir := t.TempDir()
	recorded, id := chainRecords(t, dir, depth)
	log := &memNodeLog{nodes: map[uint64]RecordedNode{}, counts: map[uint64]uint64{}}
	after := loopbackBridge(t, dir)
	if n, later := RestoreNodes(after, recorded, 0); n != 0 || later != depth+1 { // g's parent is not known
		t.Fatalf("restored %d, %d left; want none restored, %d left", n, later, depth+1)
	}
	RecordNodes(after, log)

	// Requests about nodes along the chain, at once: each restores the node and those above it.
	var wg sync.WaitGroup
	errs := make(chan string, depth)
	for k := 1; k <= depth; k += 7 {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			var out fuse.AttrOut
			if st := after.GetAttr(nil, &fuse.GetAttrIn{InHeader: fuse.InHeader{NodeId: id(k)}}, &out); !st.Ok() || out.Mode&syscall.S_IFDIR == 0 {
				errs <- fmt.Sprintf("node %d: %v, mode %o", id(k), st, out.Mode)
			}
		}(k)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	// By name: the lookup of f in the deepest folder answers f's recorded id (found under its rename's name).
	var entry fuse.EntryOut
	if st := after.Lookup(nil, &fuse.InHeader{NodeId: id(1)}, "f", &entry); !st.Ok() || entry.NodeId != 3 {
		t.Fatalf("lookup of f: %v, node %d; want node 3", st, entry.NodeId)
	}
	if left := after.pending.left.Load(); left != 0 {
		t.Errorf("%d left after every node was named", left)
	}
	// Restored while serving, each node's count is the kernel's in the node log (f: the recorded one and the
	// lookup's), not the 1 its registering recorded.
	log.mu.Lock()
	if c := log.counts[id(depth)]; c != 1 {
		t.Errorf("the log's count of the top folder: %d, want 1", c)
	}
	if c := log.counts[3]; c != 2 {
		t.Errorf("the log's count of f: %d, want 2", c)
	}
	log.mu.Unlock()
}

// RestoreNodes stops at its bound inside a chain too (one node's parents are restored first, and a deep chain's
// cost the square of its depth): what it did not restore waits, and is restored when used.
func TestRestoreStopsInsideAChain(t *testing.T) {
	restoreWithin(t, time.Microsecond)
	const depth = 300
	dir := t.TempDir()
	recorded, id := chainRecords(t, dir, depth)
	after := loopbackBridge(t, dir)
	n, later := RestoreNodes(after, recorded, 0)
	if later == 0 || n+later != depth+1 {
		t.Fatalf("restored %d, %d left; want some left, %d in all", n, later, depth+1)
	}
	var out fuse.AttrOut
	if st := after.GetAttr(nil, &fuse.GetAttrIn{InHeader: fuse.InHeader{NodeId: 3}}, &out); !st.Ok() || out.Mode&syscall.S_IFREG == 0 {
		t.Fatalf("node 3: %v, mode %o", st, out.Mode)
	}
	if e, _ := after.ids.node(id(1), 0); e == nil || after.pending.left.Load() != 0 {
		t.Fatalf("the deepest folder: %v; %d left", e, after.pending.left.Load())
	}
}

// Requests restoring nodes that share parents by two ways (each folder's recorded rename into its grandparent, as
// a server killed mid-rename leaves them) at once: none waits for another for good.
func TestRestoreLaterTwoParentsAtOnce(t *testing.T) {
	restoreWithin(t, 0)
	const depth = 300
	dir := t.TempDir()
	recorded, id := chainRecords(t, dir, depth)
	for k := range recorded[:depth-1] {
		recorded[k].AltParent, recorded[k].AltName = id(k+3), "x"
	}
	for round := 0; round < 20; round++ {
		after := loopbackBridge(t, dir)
		RestoreNodes(after, slices.Clone(recorded), 0)
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for k := 1 + g; k <= depth; k += 8 + g {
					after.restorePending(id(k))
				}
			}(g)
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: restores wait for each other", round)
		}
		if e, _ := after.ids.node(id(1), 0); e == nil {
			t.Fatalf("round %d: the deepest folder not restored", round)
		}
	}
}

// A node left for later that the kernel forgets is gone, from the node log too, never restored; one whose name
// is gone (lost) is counted down alike.
func TestRestoreLaterForgotten(t *testing.T) {
	restoreWithin(t, 0)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	log := &memNodeLog{nodes: map[uint64]RecordedNode{
		7: {ID: 7, Parent: fuse.FUSE_ROOT_ID, Name: "f"},
		8: {ID: 8, Parent: fuse.FUSE_ROOT_ID, Name: "gone"},
	}, counts: map[uint64]uint64{7: 3, 8: 2}}
	after := loopbackBridge(t, dir)
	if _, later := RestoreNodes(after, log.recorded(), 0); later != 2 {
		t.Fatalf("%d left, want 2", later)
	}
	RecordNodes(after, log)
	after.Forget(7, 2)
	if c := log.counts[7]; c != 1 {
		t.Fatalf("the log's count of node 7 after forgetting 2 of 3: %d", c)
	}
	after.Forget(7, 1)
	after.restorePending(8) // a request about it: its name is gone
	if e, _ := after.ids.node(8, 0); e != nil {
		t.Fatal("a node whose name is gone was restored")
	}
	after.Forget(8, 2)
	if len(log.recorded()) != 0 {
		t.Fatalf("the log still holds %+v", log.recorded())
	}
	if e, _ := after.ids.node(7, 0); e != nil {
		t.Fatal("a node the kernel forgot was restored")
	}
	if left := after.pending.left.Load(); left != 0 || len(after.pending.byID) != 0 {
		t.Fatalf("%d left, %d in the table", left, len(after.pending.byID))
	}
}

// Records whose parents lead back to themselves (a log raced by renames, or a subverted server's) are lost: no
// request waits for itself.
func TestRestoreLaterCycle(t *testing.T) {
	restoreWithin(t, 0)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	after := loopbackBridge(t, dir)
	recorded := []RecordedNode{
		{ID: 5, Parent: 6, Name: "a", AltParent: fuse.FUSE_ROOT_ID, AltName: "a"},
		{ID: 6, Parent: 7, Name: "b"},
		{ID: 7, Parent: 5, Name: "c"},
	}
	if _, later := RestoreNodes(after, recorded, 0); later != 0 {
		t.Fatalf("%d left, want the cycle lost", later)
	}
	done := make(chan struct{})
	go func() {
		after.restorePending(5)
		after.restorePending(7)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a restore of a cycle waits")
	}
}

// A restored node whose recorded count is lower than the kernel's (a node log a subverted server wrote) is freed
// by the kernel's FORGET of all it holds, without a panic with the node locked: its later requests get an error,
// and its folder's requests are served.
func TestRestoredCountTooLowFreesNode(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	after := loopbackBridge(t, dir)
	if n, _ := RestoreNodes(after, []RecordedNode{{ID: 7, Parent: fuse.FUSE_ROOT_ID, Name: "f", Lookups: 1}}, 0); n != 1 {
		t.Fatalf("restored %d", n)
	}
	after.Forget(7, 5) // the kernel held 5
	if e, _ := after.ids.node(7, 0); e != nil {
		t.Fatal("the node stays after the kernel forgot more than it counted")
	}
	var out fuse.EntryOut
	if st := after.Lookup(nil, &fuse.InHeader{NodeId: fuse.FUSE_ROOT_ID}, "f", &out); !st.Ok() {
		t.Fatalf("lookup of f in its folder after: %v", st)
	}
}
