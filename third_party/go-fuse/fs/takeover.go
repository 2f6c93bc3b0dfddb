// Copyright 2026 the Go-FUSE Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package fs

import (
	"fmt"
	"sort"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Takeover patch (see ../TAKEOVER.md). A server that takes over a FUSE connection (fuse.ResumeServer) meets node
// ids the kernel holds from the server before it. Node ids are this package's own numbers, so the server before
// records each as it hands it out (NodeLog: the parent's node id and the name it was looked up by), and the new
// server replays the record (RestoreNodes): each name looked up again in its parent, and the node found
// registered under the recorded id.

// NodeLog is told of every node id handed to the kernel under a name, of every rename of one, and of every one
// the kernel forgot. Calls come from the serving goroutines, concurrently, with node locks held: an implementation
// records and returns.
type NodeLog interface {
	// Named: the kernel knows node id (inode number ino) under name in folder parent (a lookup, create, or
	// rename).
	Named(id, parent uint64, name string, ino uint64)
	// Renaming: node id is about to be renamed to name in folder parent; Named follows when it was. A server after
	// this one finds the node under either name (one that died between the two finds it under the new one).
	Renaming(id, parent uint64, name string)
	// Forgot: the kernel dropped node id.
	Forgot(id uint64)
	// Backing: the kernel reads and writes refs of node id's open files through passthrough backing id backing
	// (0: no longer, and refs 0). The kernel allows one backing file per inode at a time: a server after this one
	// must answer an open of the node with the same id while a file opened before is open, and closes the id once
	// those files are released (Passthrough tells which they are).
	Backing(id uint64, backing int32, refs int)
	// Passthrough: file handle fh is (on) or is no longer (off) one of the files counted in Backing's refs.
	Passthrough(fh uint32, on bool)
	// Handles: no file handle at or past upTo was handed out yet. A server after this one hands out its own from
	// there, so that a RELEASE of a handle of this one never releases one of its own.
	Handles(upTo uint32)
	// Counted: node id's lookup count is now count (0: Forgot follows). Called under the node table's lock, on
	// every LOOKUP answered and FORGET applied, before the answer is sent: a server after this one starts each
	// restored node with it, so the kernel's FORGETs free it. (A server killed between the count and its answer
	// leaves one too many: the node stays, never gone too early.)
	Counted(id, count uint64)
}

// handleStep is how often Handles is told: once every so many handles handed out.
const handleStep = 1024

// RecordNodes makes raw (a NewNodeFS) tell log of the node ids it hands out, from now on.
func RecordNodes(raw fuse.RawFileSystem, log NodeLog) {
	b := raw.(*rawBridge)
	b.nodeLog = log
	b.ids.mu.Lock()
	b.ids.onHandles = log.Handles
	b.ids.onCount = log.Counted
	b.ids.mu.Unlock()
}

// logLookup records child, registered under name in parent, the first time the kernel is given its node id
// (the caller holds both nodes' locks, so no FORGET or second lookup interleaves).
func (b *rawBridge) logLookup(parent *Inode, name string, child *Inode, e *nodeEntry) {
	b.ids.mu.Lock()
	first := e.lookupCount == 1
	b.ids.mu.Unlock()
	if first {
		b.nodeLog.Named(child.nodeId, parent.nodeId, name, b.stableIno(child))
	}
}

// stableIno is n's inode number when the file system chose it (0 for one handed out automatically: another
// server numbers those in its own order).
func (b *rawBridge) stableIno(n *Inode) uint64 {
	first := b.options.FirstAutomaticIno
	if first == 0 {
		first = 1 << 63
	}
	if n.stableAttr.Ino >= first {
		return 0
	}
	return n.stableAttr.Ino
}

// logRenaming records the rename about to be made (and, for an exchange, the other way too).
func (b *rawBridge) logRenaming(p1 *Inode, oldName string, p2 *Inode, newName string, exchange bool) {
	if b.nodeLog == nil {
		return
	}
	if ch := p1.GetChild(oldName); ch != nil && ch.nodeId != 0 {
		b.nodeLog.Renaming(ch.nodeId, p2.nodeId, newName)
	}
	if ch := p2.GetChild(newName); exchange && ch != nil && ch.nodeId != 0 {
		b.nodeLog.Renaming(ch.nodeId, p1.nodeId, oldName)
	}
}

// logRename records the node now under newName in p2 (and, for an exchange, the one now under oldName in p1).
func (b *rawBridge) logRename(p1 *Inode, oldName string, p2 *Inode, newName string, exchange bool) {
	if b.nodeLog == nil {
		return
	}
	if ch := p2.GetChild(newName); ch != nil && ch.nodeId != 0 {
		b.nodeLog.Named(ch.nodeId, p2.nodeId, newName, b.stableIno(ch))
	}
	if ch := p1.GetChild(oldName); exchange && ch != nil && ch.nodeId != 0 {
		b.nodeLog.Named(ch.nodeId, p1.nodeId, oldName, b.stableIno(ch))
	}
}

// forgetUnknown says whether nodeid is one the server before handed out and this one did not restore: its FORGET
// is nothing to this server.
func (b *rawBridge) forgetUnknown(nodeid uint64) bool {
	e, _ := b.ids.node(nodeid, 0)
	return e == nil
}

// RecordedNode is a node id the kernel holds, as NodeLog recorded it last.
type RecordedNode struct {
	ID, Parent uint64
	Name       string
	Ino        uint64 // its inode number (0: any)
	// AltParent and AltName: the name of a rename begun and not known to have been made (see NodeLog.Renaming).
	AltParent uint64
	AltName   string
	Backing   int32  // the passthrough backing id of its open files (0: none)
	Refs      int    // how many files use it (0: not known)
	Lookups   uint64 // the kernel's lookup count (NodeLog.Counted; 0: not known)
}

// restoredLookups is the lookup count a restored node starts with when the kernel's is not known (or the node is
// known under two ids): the node stays until the mount ends (the kernel's FORGETs never bring it to zero).
const restoredLookups = 1 << 48

// RestoreNodes registers in raw (a NewNodeFS, not yet serving) the node ids of nodes, each found by a lookup of its
// name in its parent, parents first: the ids the kernel holds from the server before. It restores for at most
// eagerRestore and leaves the rest to be restored when the kernel first names them (takeover_pending.go). From
// then on raw takes file handles it never handed out as none, and hands out its own from handles (what
// NodeLog.Handles was told last; 0: none was) on. A node whose parent or name is gone is left out (the kernel's
// requests for it get EIO). It returns how many were restored, and how many are left for later.
func RestoreNodes(raw fuse.RawFileSystem, nodes []RecordedNode, handles uint32) (restored, later int) {
	b := raw.(*rawBridge)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	b.ids.mu.Lock()
	b.ids.resumed = true
	handles = max(handles, handleStep) // below the first report, every handle before was under handleStep
	if n := int(handles) - len(b.ids.files); n > 0 {
		b.ids.files = append(b.ids.files, make([]*fileEntry, n)...) // none: the server before's
	}
	if n := len(nodes); n > 0 && nodes[n-1].ID >= b.ids.nextNodeId {
		b.ids.nextNodeId = nodes[n-1].ID + 1 // new ids never collide with the kernel's
	}
	b.ids.mu.Unlock()
	b.pending.record(nodes)
	// Parents first, each node once: a node's recorded parents are restored before it (a chain of folders each
	// renamed into a newer one, which a mount's user makes with mkdir and mv, has each node's parent after it).
	deadline := time.Now().Add(eagerRestore)
	for _, r := range nodes {
		if b.pending.left.Load() == 0 || time.Now().After(deadline) {
			break
		}
		b.restorePendingBy(r.ID, deadline)
	}
	b.ids.mu.Lock()
	for _, r := range nodes {
		if e := b.ids.nodes[r.ID]; e != nil {
			restored++
		}
	}
	b.ids.mu.Unlock()
	return restored, int(b.pending.left.Load())
}

// find looks name up in folder parentID: the node there if it is the inode ino (0: any).
func (b *rawBridge) find(ctx *fuse.Context, parentID uint64, name string, ino uint64) (parent, child *Inode, out fuse.EntryOut) {
	if name == "" || name == "." || name == ".." {
		return nil, nil, out
	}
	pe, _ := b.ids.node(parentID, 0)
	if pe == nil {
		return nil, nil, out
	}
	parent = pe.inode.Load()
	child, errno := b.lookup(ctx, parent, name, &out)
	if errno != 0 || child == nil || ino != 0 && child.stableAttr.Ino != ino {
		return nil, nil, out
	}
	return parent, child, out
}

// restore registers child, found under r.Name in parent, under r.ID.
func (b *rawBridge) restore(parent *Inode, r RecordedNode, child *Inode, out *fuse.EntryOut) error {
	b.ids.mu.Lock()
	if e := b.ids.nodes[child.nodeId]; e == nil || e.inode.Load() != child {
		child.nodeId = r.ID // not handed out yet: it takes the kernel's id
	}
	b.ids.mu.Unlock()
	selected, _, _ := b.addNewNode(parent, r.Name, child, nil, 0, out)
	b.ids.mu.Lock()
	e := b.ids.nodes[r.ID]
	lookups := r.Lookups
	if selected.nodeId != r.ID {
		// The same node under a second id (a hard link, or a node registered earlier): the kernel's id names it too.
		if e == nil {
			e = &nodeEntry{}
			e.inode.Store(selected)
			b.ids.nodes[r.ID] = e
		} else if e.inode.Load() != selected {
			b.ids.mu.Unlock()
			return fmt.Errorf("node %d restored as two nodes", r.ID)
		}
		// A FORGET of either id counts down the node's own: neither may reach zero.
		lookups = restoredLookups
		if se := b.ids.nodes[selected.nodeId]; se != nil {
			se.lookupCount = restoredLookups
			b.counted(selected.nodeId, se.lookupCount)
		}
	}
	if lookups == 0 || lookups > restoredLookups {
		lookups = restoredLookups
	}
	if e.lookupCount <= restoredLookups { // one restored before as a second id's node keeps its count
		// Registering counted one lookup, the restore's own. A node restored while serving may have been found
		// since by a lookup of another of its names (a hard link): the kernel holds that lookup too, on top of
		// its recorded ones, and would forget one more than the node had (an underflow: a panic with the node
		// locked, so its requests wait for good).
		since := uint64(0)
		if selected.nodeId == r.ID && e.lookupCount > 1 {
			since = e.lookupCount - 1
		}
		e.lookupCount = min(lookups+since, restoredLookups)
	}
	b.counted(r.ID, e.lookupCount) // a node restored while serving: registering it recorded a count of 1
	b.ids.mu.Unlock()
	if r.Backing != 0 && selected.nodeId == r.ID {
		// Closed once the files of the server before that use it are released (RestorePassthrough); kept till the
		// mount ends when how many they are is not known.
		refs := r.Refs
		if refs <= 0 {
			refs = restoredLookups
		}
		b.backingMu.Lock()
		e.backingID, e.backingIDRefcount = r.Backing, refs
		b.backingMu.Unlock()
	}
	return nil
}

// counted tells the node log, if one is recording, of node id's lookup count (b.ids.mu held).
func (b *rawBridge) counted(id, count uint64) {
	if b.ids.onCount != nil {
		b.ids.onCount(id, count)
	}
}

// RestorePassthrough tells raw (restored by RestoreNodes) which handles of the server before read and wrote through
// their node's backing file (NodeLog.Passthrough): the RELEASE of each counts down its node's restored refs, and
// the last closes the backing id (a flock taken on the file goes with it).
func RestorePassthrough(raw fuse.RawFileSystem, handles []uint32) {
	b := raw.(*rawBridge)
	b.backingMu.Lock()
	defer b.backingMu.Unlock()
	b.restoredPassthrough = make(map[uint32]bool, len(handles))
	for _, fh := range handles {
		b.restoredPassthrough[fh] = true
	}
}

// releaseRestored releases handle fh of the server before, of node entry e (nil: not restored).
func (b *rawBridge) releaseRestored(e *nodeEntry, fh uint32) {
	if e == nil {
		return
	}
	b.backingMu.Lock()
	defer b.backingMu.Unlock()
	if b.restoredPassthrough[fh] {
		delete(b.restoredPassthrough, fh)
		b.releaseBackingIDRef(e, fh)
	}
}
