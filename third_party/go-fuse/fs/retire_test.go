// Copyright 2026 the Go-FUSE Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package fs

import (
	"syscall"
	"testing"
)

// TestRetire: a retired node leaves the identity table's StableAttr to the next node registered under it, keeps
// its own node ID until it is forgotten, and then goes without taking the new node with it.
func TestRetire(t *testing.T) {
	var ids mapIdentityTable
	ids.initIdentityTable(0, false)
	attr := StableAttr{Mode: syscall.S_IFDIR, Ino: 42, Gen: 7}
	old := &Inode{stableAttr: attr, nodeId: ids.allocateNodeID()}
	if w, _, _ := ids.registerNew(attr, old, false); w != old {
		t.Fatalf("first node: registered %v", w)
	}
	if !ids.retire(old) {
		t.Fatal("retire of the node of its StableAttr: false")
	}
	if ids.retire(old) {
		t.Fatal("a second retire: true")
	}
	renamed := &Inode{stableAttr: attr, nodeId: ids.allocateNodeID()}
	if w, _, _ := ids.registerNew(attr, renamed, false); w != renamed {
		t.Fatalf("after retire, the same StableAttr gave the retired node %v", w)
	}
	if e, _ := ids.node(old.nodeId, 0); e == nil || e.inode.Load() != old {
		t.Fatal("the retired node lost its node ID before it was forgotten")
	}
	ids.forget(old)
	if e, _ := ids.node(old.nodeId, 0); e != nil {
		t.Fatal("the retired node's node ID outlived its forget")
	}
	if ids.findByAttr(attr) != renamed {
		t.Fatal("forgetting the retired node dropped the new node of its StableAttr")
	}
	if e, _ := ids.node(renamed.nodeId, 0); e == nil || e.inode.Load() != renamed {
		t.Fatal("forgetting the retired node dropped the new node's ID")
	}

	var ext mapIdentityTable
	ext.initIdentityTable(0, true)
	n := &Inode{stableAttr: attr, nodeId: attr.Ino}
	ext.registerNew(attr, n, false)
	if ext.retire(n) {
		t.Fatal("retired under ExternalNodeID, where the StableAttr is the kernel's node ID")
	}
}
