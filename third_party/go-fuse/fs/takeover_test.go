// Copyright 2026 the Go-FUSE Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package fs

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

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
	if n, err := RestoreNodes(after, recorded, 0); err != nil || n != 1 {
		t.Fatalf("restored %d, %v", n, err)
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
	if n, err := RestoreNodes(after, []RecordedNode{{ID: out.NodeId, Parent: fuse.FUSE_ROOT_ID, Name: "f"}}, 0); err != nil || n != 1 {
		t.Fatalf("restored %d, %v", n, err)
	}
	after.Forget(out.NodeId, 5)
	if e, _ := after.ids.node(out.NodeId, 0); e == nil {
		t.Fatal("a node of unknown count freed")
	}
}

// A chain of folders each renamed into a newer one (each node's parent has a higher id than the node, as mkdir
// and mv make it) is restored whole, as are a node found under the name of a rename begun (its recorded parent
// gone) and none whose parent is gone: a node waits for its parent, and is tried again once that is restored.
func TestRestoreChainOfRenamedFolders(t *testing.T) {
	dir := t.TempDir()
	const depth = 1500 // the loopback file system goes by paths: within PATH_MAX
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
	var recorded []RecordedNode
	id := func(k int) uint64 { return uint64(10 + k) } // c_k's: lower the deeper
	for k := 1; k <= depth; k++ {
		parent := uint64(fuse.FUSE_ROOT_ID)
		if k < depth {
			parent = id(k + 1)
		}
		recorded = append(recorded, RecordedNode{ID: id(k), Parent: parent, Name: "d"})
	}
	// f: its recorded parent is a node no one restores, its rename's is c1 (the deepest, restored last).
	recorded = append(recorded, RecordedNode{ID: 3, Parent: 5, Name: "f", AltParent: id(1), AltName: "f"},
		RecordedNode{ID: 4, Parent: 6, Name: "g"})
	after := loopbackBridge(t, dir)
	n, err := RestoreNodes(after, recorded, 0)
	if err != nil || n != depth+1 {
		t.Fatalf("restored %d of %d, %v", n, depth+1, err)
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
