// Copyright 2026 the Go-FUSE Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package fs

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Attacks on the nodes RestoreNodes leaves for later (takeover_pending.go), as a mount's user makes them: the
// requests are the kernel's, called on the bridge as its server would.

// lookupCount is the server's count of node id's lookups (0: not registered).
func lookupCount(b *rawBridge, id uint64) uint64 {
	b.ids.mu.Lock()
	defer b.ids.mu.Unlock()
	if e := b.ids.nodes[id]; e != nil {
		return e.lookupCount
	}
	return 0
}

// inoOf is the inode number of file p.
func inoOf(t *testing.T, p string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// getattrOrPanic is the kernel's GETATTR of node id, a panic (which the server answers with EIO) taken as a
// failure.
func getattrOrPanic(b *rawBridge, id uint64, out *fuse.AttrOut) (st fuse.Status) {
	defer func() {
		if recover() != nil {
			st = fuse.EIO
		}
	}()
	return b.GetAttr(nil, &fuse.GetAttrIn{InHeader: fuse.InHeader{NodeId: id}}, out)
}

// A session's process exchanges two files' names behind the mount (renameat2 RENAME_EXCHANGE in the store), before
// and while the nodes the kernel holds for them are restored when first named: a node is restored as its own
// file (its recorded inode number) or not at all, never as the file now under its name.
func TestAttackRestoreLaterExchangedNames(t *testing.T) {
	restoreWithin(t, 0)
	dir := t.TempDir()
	f, g := filepath.Join(dir, "f"), filepath.Join(dir, "g")
	for _, p := range []string{f, g} {
		if err := os.WriteFile(p, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ino := map[uint64]uint64{7: inoOf(t, f), 8: inoOf(t, g)}
	records := func() []RecordedNode {
		return []RecordedNode{
			{ID: 7, Parent: fuse.FUSE_ROOT_ID, Name: "f", Ino: ino[7], Lookups: 1},
			{ID: 8, Parent: fuse.FUSE_ROOT_ID, Name: "g", Ino: ino[8], Lookups: 1},
		}
	}
	exchange := func() {
		if err := unix.Renameat2(unix.AT_FDCWD, f, unix.AT_FDCWD, g, unix.RENAME_EXCHANGE); err != nil {
			t.Error(err)
		}
	}
	// checkOwn fails if node id is registered as another file than its own.
	checkOwn := func(b *rawBridge, id uint64, how string) {
		b.ids.mu.Lock()
		e := b.ids.nodes[id]
		b.ids.mu.Unlock()
		if e != nil && e.inode.Load().stableAttr.Ino != ino[id] {
			t.Errorf("%s: node %d restored as inode %d, its own is %d", how, id, e.inode.Load().stableAttr.Ino, ino[id])
		}
	}

	// Exchanged once before the kernel names them: each is lost (EIO), and a lookup of its name answers the file
	// there now under a new id.
	exchange()
	after := loopbackBridge(t, dir)
	RestoreNodes(after, records(), 0)
	var attr fuse.AttrOut
	if st := getattrOrPanic(after, 7, &attr); st.Ok() && attr.Ino != ino[7] {
		t.Errorf("node 7 answered as inode %d, its own is %d", attr.Ino, ino[7])
	}
	var entry fuse.EntryOut
	if st := after.Lookup(nil, &fuse.InHeader{NodeId: fuse.FUSE_ROOT_ID}, "g", &entry); !st.Ok() || entry.NodeId == 8 {
		t.Errorf("lookup of g (now f's file): %v, node %d; want a new node", st, entry.NodeId)
	}
	checkOwn(after, 7, "exchanged before")
	checkOwn(after, 8, "exchanged before")
	exchange()

	// Exchanged in a loop while requests restore them, by id and by name.
	const bound = 2000
	stop := make(chan struct{})
	var swaps int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				exchange()
				swaps++
			}
		}
	}()
	for try := 0; try < bound; try++ {
		after := loopbackBridge(t, dir)
		RestoreNodes(after, records(), 0)
		var rw sync.WaitGroup
		rw.Add(2)
		go func() {
			defer rw.Done()
			var attr fuse.AttrOut
			if st := getattrOrPanic(after, 7, &attr); st.Ok() && attr.Ino != ino[7] {
				t.Errorf("try %d: node 7 answered as inode %d", try, attr.Ino)
			}
		}()
		go func() {
			defer rw.Done()
			var entry fuse.EntryOut
			after.Lookup(nil, &fuse.InHeader{NodeId: fuse.FUSE_ROOT_ID}, "g", &entry)
		}()
		rw.Wait()
		checkOwn(after, 7, "exchanged meanwhile")
		checkOwn(after, 8, "exchanged meanwhile")
		if t.Failed() {
			break
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d tries of restores by id and by name, the names exchanged %d times meanwhile", bound, swaps)
}

// The kernel's FORGETs of a node left for later while a request restores it are counted, neither lost nor applied
// twice: the server's count and the node log's stay the kernel's.
func TestAttackRestoreLaterForgetDuringRestore(t *testing.T) {
	restoreWithin(t, 0)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	const (
		recorded = 3
		bound    = 2000
	)
	for try := 1; try <= bound; try++ {
		after := loopbackBridge(t, dir)
		RestoreNodes(after, []RecordedNode{{ID: 7, Parent: fuse.FUSE_ROOT_ID, Name: "f", Lookups: recorded}}, 0)
		log := &memNodeLog{nodes: map[uint64]RecordedNode{7: {ID: 7, Parent: fuse.FUSE_ROOT_ID, Name: "f"}},
			counts: map[uint64]uint64{7: recorded}}
		RecordNodes(after, log)
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			var attr fuse.AttrOut
			after.GetAttr(nil, &fuse.GetAttrIn{InHeader: fuse.InHeader{NodeId: 7}}, &attr)
		}()
		go func() {
			defer wg.Done()
			<-start
			after.Forget(7, 1)
		}()
		close(start)
		wg.Wait()
		log.mu.Lock()
		logged := log.counts[7]
		log.mu.Unlock()
		if c := lookupCount(after, 7); c != recorded-1 || logged != recorded-1 {
			t.Fatalf("try %d: the kernel holds %d lookups, the server counts %d, the node log %d", try, recorded-1, c, logged)
		}
		after.Forget(7, recorded-1)
		if e, _ := after.ids.node(7, 0); e != nil || len(log.recorded()) != 0 {
			t.Fatalf("try %d: node 7 held after the kernel forgot it (log: %+v)", try, log.recorded())
		}
	}
	t.Logf("%d tries of a FORGET racing the restore", bound)
}

// gateRoot is a folder whose lookup of "slow" waits until released: a restore that costs its maker (a deep chain's
// folder, looked up by its path), or one stuck in the store.
type gateRoot struct {
	Inode
	entered chan struct{}
	release chan struct{}
}

func (r *gateRoot) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*Inode, syscall.Errno) {
	ino := map[string]uint64{"slow": 100, "x": 400, "b": 200, "c": 300}[name]
	if ino == 0 {
		return nil, syscall.ENOENT
	}
	if name == "slow" {
		r.entered <- struct{}{}
		<-r.release
	}
	out.Attr.Mode = syscall.S_IFDIR | 0o755
	return r.NewInode(ctx, &gateRoot{entered: r.entered, release: r.release}, StableAttr{Mode: syscall.S_IFDIR, Ino: ino}), 0
}

// A request restoring an attacker's node that does not end (its lookup waits) makes no other node's restore, no
// FORGET and no lookup elsewhere wait: another session's requests go on. Only a request needing the attacker's
// node, or a node below it, waits for it.
func TestAttackRestoreLaterStuckRestoreBlocksNoOther(t *testing.T) {
	restoreWithin(t, 0)
	root := &gateRoot{entered: make(chan struct{}), release: make(chan struct{})}
	b := NewNodeFS(root, &Options{}).(*rawBridge)
	RestoreNodes(b, []RecordedNode{
		{ID: 10, Parent: fuse.FUSE_ROOT_ID, Name: "slow", Lookups: 1}, // the attacker's folder
		{ID: 11, Parent: 10, Name: "x", Lookups: 2},                   // and one in it
		{ID: 12, Parent: fuse.FUSE_ROOT_ID, Name: "b", Lookups: 1},    // another session's
		{ID: 13, Parent: 12, Name: "c", Lookups: 1},
	}, 0)
	attacker := make(chan fuse.Status)
	go func() {
		var attr fuse.AttrOut
		attacker <- getattrOrPanic(b, 11, &attr)
	}()
	<-root.entered // the attacker's restore of node 10 waits in its lookup
	released := false
	t.Cleanup(func() {
		if !released {
			close(root.release)
		}
	})

	other := make(chan string)
	go func() {
		var attr fuse.AttrOut
		if st := getattrOrPanic(b, 13, &attr); !st.Ok() {
			other <- "getattr of another session's node 13: " + st.String()
			return
		}
		var entry fuse.EntryOut
		if st := b.Lookup(nil, &fuse.InHeader{NodeId: 12}, "c", &entry); !st.Ok() || entry.NodeId != 13 {
			other <- "lookup of c in another session's folder: " + st.String()
			return
		}
		b.Forget(11, 1) // the kernel forgets one of the attacker's node's lookups meanwhile
		other <- ""
	}()
	select {
	case msg := <-other:
		if msg != "" {
			t.Error(msg)
		}
	case <-time.After(30 * time.Second): // a hang, not a speed: these requests need nothing of the attacker's
		t.Fatal("another session's requests wait for the attacker's restore")
	}
	close(root.release)
	released = true
	if st := <-attacker; !st.Ok() {
		t.Errorf("the attacker's node once released: %v", st)
	}
	if c := lookupCount(b, 11); c != 1 {
		t.Errorf("the attacker's node 11: count %d after 2 recorded and 1 forgotten", c)
	}
	if e, _ := b.ids.node(10, 0); e == nil {
		t.Error("node 10 (a folder with a child the kernel holds) was freed")
	}
}

// A node left for later is restored while the server serves. A lookup of the same file under another name (a
// hard link; in sessionfs, the same transcript under another view's folder) at the same time finds the node as
// the restore registers it, and adds its lookup: the kernel holds the recorded lookups and that one. The restore
// then sets the node's count to the recorded one, and the lookup added is lost: the kernel's FORGET of all it
// holds underflows the count (a panic with the node's lock held, so every later request that locks the node,
// and its folder, waits for good), and the node log tells the next server the lower count.
func TestAttackRestoreLaterCountRace(t *testing.T) {
	restoreWithin(t, 0)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "f"), filepath.Join(dir, "d", "g")); err != nil {
		t.Fatal(err)
	}
	const (
		fID, dID = 7, 8
		recorded = 3 // the kernel's lookups of f, as the node log counted them
		bound    = 100000
	)
	tries, aliased := 0, 0
	var lost *rawBridge
	var kernel, ours, logged uint64
	for tries < bound && lost == nil {
		tries++
		after := loopbackBridge(t, dir)
		nodes := []RecordedNode{
			{ID: fID, Parent: fuse.FUSE_ROOT_ID, Name: "f", Lookups: recorded},
			{ID: dID, Parent: fuse.FUSE_ROOT_ID, Name: "d", Lookups: 1},
		}
		if n, later := RestoreNodes(after, nodes, 0); n != 0 || later != 2 {
			t.Fatalf("restored %d, %d left; want both left", n, later)
		}
		log := &memNodeLog{nodes: map[uint64]RecordedNode{}, counts: map[uint64]uint64{}}
		RecordNodes(after, log)
		after.restorePending(dID) // d is in use: only f is left

		start := make(chan struct{})
		var wg sync.WaitGroup
		var attr fuse.AttrOut
		var entry fuse.EntryOut
		var getattr, lookup fuse.Status
		wg.Add(2)
		go func() { // a request about f by its id: f is restored
			defer wg.Done()
			<-start
			getattr = after.GetAttr(nil, &fuse.GetAttrIn{InHeader: fuse.InHeader{NodeId: fID}}, &attr)
		}()
		go func() { // a lookup of f's hard link g
			defer wg.Done()
			<-start
			lookup = after.Lookup(nil, &fuse.InHeader{NodeId: dID}, "g", &entry)
		}()
		close(start)
		wg.Wait()
		if !getattr.Ok() || !lookup.Ok() {
			t.Fatalf("try %d: getattr of f %v, lookup of g %v", tries, getattr, lookup)
		}
		kernel = recorded
		if entry.NodeId == fID { // the kernel counts the lookup's answer on f's inode
			kernel++
			aliased++
		}
		ours = lookupCount(after, fID)
		log.mu.Lock()
		logged = log.counts[fID]
		log.mu.Unlock()
		if ours < kernel {
			lost = after
		}
	}
	t.Logf("%d tries (bound %d), %d with g's lookup answered as f's node", tries, bound, aliased)
	if lost == nil {
		return
	}
	t.Errorf("try %d: the kernel holds %d lookups of node %d, the server counts %d, the node log %d", tries, kernel, fID, ours, logged)
	// The kernel forgets the node (its names unlinked, or its dentries pruned): one FORGET of all it holds.
	n := lost.ids.nodes[fID].inode.Load()
	var panicked any
	func() {
		defer func() { panicked = recover() }() // as the server's request loop recovers it (an EIO to nobody)
		lost.Forget(fID, kernel)
	}()
	if panicked != nil {
		t.Errorf("the kernel's FORGET of %d lookups: panic %q", kernel, panicked)
		if n.mu.TryLock() {
			n.mu.Unlock()
		} else {
			t.Errorf("node %d's lock is held for good after the panic: every request that locks it waits", fID)
		}
	}
}
