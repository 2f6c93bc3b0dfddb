// Copyright 2026 the Go-FUSE Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package fs

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Takeover patch: the nodes RestoreNodes leaves for later. A node is restored by a lookup of its name in its
// parent, and what a lookup costs is the file system's: one that resolves a path from its root pays for each
// folder above the node, so the nodes of a chain of n nested folders cost n²/2. A session of sessionfs makes such
// a chain in seconds (mkdir and mv, 16,000 folders), and restoring every node the kernel held before serving took
// past the holder's bound: every session's connection was ended. So RestoreNodes restores for at most
// eagerRestore, parents first, and leaves the rest recorded: each is restored when the kernel first names it, by
// id (any request about it) or by name in its parent (a lookup, a create, an unlink or rename, a READDIRPLUS of
// its parent), parents first. A takeover then costs what the nodes used soon cost, and a deep chain's nodes cost
// their user, when used.

// eagerRestore bounds how long RestoreNodes restores before the server serves.
var eagerRestore = 500 * time.Millisecond

// pendingState is where a recorded node is in being restored.
type pendingState uint8

const (
	pendingWaiting   pendingState = iota // not begun
	pendingRestoring                     // a request restores it: wait for done
	pendingLost                          // its name is gone: requests about it fail, FORGETs count it down
)

// pendingNode is a recorded node not restored.
type pendingNode struct {
	rec   RecordedNode
	state pendingState
	done  chan struct{} // closed once restored or lost (made when it is begun)
	// forgot: the lookups the kernel forgot while it was being restored, forgotten once it is.
	forgot uint64
	mine   bool // begun by the claim under way
}

// pendingName is a name in a folder, by the folder's node id.
type pendingName struct {
	parent uint64
	name   string
}

// pendingNodes are the recorded nodes not restored yet, and the names they are recorded under.
type pendingNodes struct {
	left     atomic.Int64 // waiting or being restored: when 0, no request looks further
	mu       sync.Mutex
	byID     map[uint64]*pendingNode
	byName   map[pendingName][]uint64
	byParent map[uint64][]uint64
}

// record makes nodes the pending ones; a node whose recorded parents are not known, or lead back to itself, is
// lost (no parent of it can be restored first).
func (t *pendingNodes) record(nodes []RecordedNode) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byID = make(map[uint64]*pendingNode, len(nodes))
	t.byName = make(map[pendingName][]uint64, len(nodes))
	t.byParent = map[uint64][]uint64{}
	for _, r := range nodes {
		if r.ID <= fuse.FUSE_ROOT_ID || t.byID[r.ID] != nil {
			continue
		}
		t.byID[r.ID] = &pendingNode{rec: r}
		t.index(r.ID, r.Parent, r.Name)
		if r.AltName != "" {
			t.index(r.ID, r.AltParent, r.AltName)
		}
	}
	t.loseOrphans()
	t.loseCycles()
	left := 0
	for _, p := range t.byID {
		if p.state == pendingWaiting {
			left++
		}
	}
	t.left.Store(int64(left))
}

func (t *pendingNodes) index(id, parent uint64, name string) {
	k := pendingName{parent, name}
	t.byName[k] = append(t.byName[k], id)
	t.byParent[parent] = append(t.byParent[parent], id)
}

// parents are the folders p may be found in (its recorded name's, and a rename's begun).
func (p *pendingNode) parents() []uint64 {
	if p.rec.AltName != "" {
		return []uint64{p.rec.Parent, p.rec.AltParent}
	}
	return []uint64{p.rec.Parent}
}

// loseOrphans marks lost the nodes none of whose recorded parents is the root or recorded: no request could find
// them (the ids this server hands out are past every recorded one).
func (t *pendingNodes) loseOrphans() {
	for _, p := range t.byID {
		known := false
		for _, up := range p.parents() {
			known = known || up == fuse.FUSE_ROOT_ID || t.byID[up] != nil
		}
		if !known {
			p.state = pendingLost
		}
	}
}

// loseCycles marks lost the nodes whose recorded parents lead back to them (a log raced by renames, or written by
// a subverted server), so that restoring goes parents first with no wait on itself: each request waits only for
// nodes above the ones it restores.
func (t *pendingNodes) loseCycles() {
	const (
		unseen = iota
		onPath
		finished
	)
	color := make(map[uint64]uint8, len(t.byID))
	type frame struct {
		id   uint64
		next int // the next of its parents to visit
	}
	for start := range t.byID {
		if color[start] != unseen {
			continue
		}
		color[start] = onPath
		stack := []frame{{id: start}}
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			parents := t.byID[f.id].parents()
			if f.next == len(parents) {
				color[f.id] = finished
				stack = stack[:len(stack)-1]
				continue
			}
			up := parents[f.next]
			f.next++
			pp := t.byID[up]
			switch {
			case pp == nil:
			case color[up] == onPath: // a cycle: every node on it from up is lost
				for k := len(stack) - 1; k >= 0; k-- {
					t.byID[stack[k].id].state = pendingLost
					if stack[k].id == up {
						break
					}
				}
			case color[up] == unseen:
				color[up] = onPath
				stack = append(stack, frame{id: up})
			}
		}
	}
}

// claim begins id and each of its pending parents not begun, for the caller to restore in the order returned
// (parents first). If another request restores id or one of them, it begins none and returns that one's done
// channel: a request waits only while it has begun nothing, so no two wait for each other.
func (t *pendingNodes) claim(id uint64) (order []*pendingNode, busy chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	type frame struct {
		p    *pendingNode
		next int
	}
	var stack []frame
	var claimed []*pendingNode
	begin := func(id uint64) {
		p := t.byID[id]
		switch {
		case p == nil:
		case p.state == pendingWaiting:
			p.state, p.mine = pendingRestoring, true
			claimed = append(claimed, p)
			stack = append(stack, frame{p: p})
		case p.state == pendingRestoring && !p.mine:
			busy = p.done
		}
	}
	begin(id)
	for len(stack) > 0 && busy == nil {
		f := &stack[len(stack)-1]
		parents := f.p.parents()
		if f.next == len(parents) {
			order = append(order, f.p)
			stack = stack[:len(stack)-1]
			continue
		}
		up := parents[f.next]
		f.next++
		begin(up)
	}
	for _, p := range claimed {
		p.mine = false
	}
	if busy != nil { // none of these was seen begun: the lock was held throughout
		for _, p := range claimed {
			p.state = pendingWaiting
		}
		return nil, busy
	}
	for _, p := range order {
		p.done = make(chan struct{})
	}
	return order, nil
}

// unclaim makes nodes begun and not restored wait again (RestoreNodes past its bound: no request waits for them).
func (t *pendingNodes) unclaim(nodes []*pendingNode) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range nodes {
		close(p.done)
		p.state, p.done = pendingWaiting, nil
	}
}

// finish ends p's restore: gone from the table if restored, lost if not. It returns the lookups the kernel forgot
// meanwhile.
func (t *pendingNodes) finish(p *pendingNode, restored bool) (forgot uint64) {
	t.mu.Lock()
	if restored {
		delete(t.byID, p.rec.ID)
	} else {
		p.state = pendingLost
	}
	forgot, p.forgot = p.forgot, 0
	t.mu.Unlock()
	t.left.Add(-1)
	close(p.done)
	return forgot
}

// named are the ids recorded under name in folder parent ("": under any name).
func (t *pendingNodes) named(parent uint64, name string) []uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if name == "" {
		return t.byParent[parent]
	}
	return t.byName[pendingName{parent, name}]
}

// unname takes name in folder parent ("": the folder) off the index once its nodes are restored or lost.
func (t *pendingNodes) unname(parent uint64, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if name == "" {
		delete(t.byParent, parent)
	} else {
		delete(t.byName, pendingName{parent, name})
	}
}

// restorePending restores node id if it is recorded and not restored, with its recorded parents first (another
// request's restore of any of them is waited for).
func (b *rawBridge) restorePending(id uint64) {
	b.restorePendingBy(id, time.Time{})
}

// restorePendingBy is restorePending that stops at deadline (zero: none), leaving the nodes not restored by then
// for later (RestoreNodes: no request is served yet, so none waits for them).
func (b *rawBridge) restorePendingBy(id uint64, deadline time.Time) {
	t := &b.pending
	for t.left.Load() > 0 {
		order, busy := t.claim(id)
		if busy != nil {
			<-busy // another request restores id or a parent of it: then begin again
			continue
		}
		for i, p := range order {
			if !deadline.IsZero() && time.Now().After(deadline) {
				t.unclaim(order[i:])
				return
			}
			if forgot := t.finish(p, b.restoreRecorded(p.rec)); forgot > 0 {
				b.Forget(p.rec.ID, forgot)
			}
		}
		return
	}
}

// restorePendingNamed restores the nodes recorded under name in folder parent ("": every node recorded in it),
// before a request that names them there: the kernel holds them under their recorded ids.
func (b *rawBridge) restorePendingNamed(parent uint64, name string) {
	if b.pending.left.Load() == 0 {
		return
	}
	ids := b.pending.named(parent, name)
	for _, id := range ids {
		b.restorePending(id)
	}
	if len(ids) > 0 {
		b.pending.unname(parent, name)
	}
}

// restoreRecorded looks r up by its recorded name (or a rename's begun) and registers the node found under r.ID.
func (b *rawBridge) restoreRecorded(r RecordedNode) bool {
	ctx := &fuse.Context{Cancel: make(chan struct{})}
	name := r.Name
	parent, child, out := b.find(ctx, r.Parent, r.Name, r.Ino)
	if child == nil && r.AltName != "" {
		name = r.AltName
		parent, child, out = b.find(ctx, r.AltParent, r.AltName, r.Ino)
	}
	if child == nil {
		return false
	}
	return b.restore(parent, RecordedNode{ID: r.ID, Name: name, Backing: r.Backing, Refs: r.Refs, Lookups: r.Lookups}, child, &out) == nil
}

// forgetPending applies the kernel's FORGET of nlookup lookups of node id if it is recorded and not restored,
// and says whether it was. One the kernel no longer holds is gone, from the node log too.
func (b *rawBridge) forgetPending(id, nlookup uint64) bool {
	t := &b.pending
	t.mu.Lock()
	p := t.byID[id]
	if p != nil && p.state == pendingRestoring {
		p.forgot += nlookup // its restorer forgets them once it is restored (a FORGET waits for no restore)
		t.mu.Unlock()
		return true
	}
	if p == nil {
		t.mu.Unlock()
		return false
	}
	gone := false
	if n := p.rec.Lookups; n != 0 && n < restoredLookups { // an unknown count never reaches zero
		if nlookup >= n {
			gone = true
			delete(t.byID, id)
			if p.state == pendingWaiting {
				t.left.Add(-1)
			}
		} else {
			p.rec.Lookups = n - nlookup
		}
	}
	count := p.rec.Lookups
	t.mu.Unlock()
	if b.nodeLog != nil {
		b.ids.mu.Lock()
		if gone {
			b.counted(id, 0)
		} else if count != 0 {
			b.counted(id, count)
		}
		b.ids.mu.Unlock()
		if gone {
			b.nodeLog.Forgot(id)
		}
	}
	return true
}
