package takeover

import (
	"fmt"
	"net/rpc"
	"os"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/sessionfs/sessionfs/mount/nodes"
	"github.com/sessionfs/sessionfs/mount/takeover/nodelog"
)

// A held mount's daemons serve through go-fuse's takeover patch (third_party/go-fuse/TAKEOVER.md): its request
// gate, its resend guard, the node log's hooks, the server resumed without INIT and the node ids restored. This
// file is the patch's one user, with the lock handle's (lockowners_handles.go); package mount's keepers call it.

// First wraps the first daemon's file system: its requests gated (opts.RequestGate, which a hand-over closes),
// the node ids it hands the kernel recorded in log, and each change noted before it is made (ResendIdempotent).
func First(opts *fuse.MountOptions, nodeFS, raw fuse.RawFileSystem, log *nodelog.Log) (*Gate, fuse.RawFileSystem) {
	g := &Gate{}
	opts.RequestGate = g
	gofs.RecordNodes(nodeFS, log)
	return g, ResendIdempotent{RawFileSystem: raw}
}

// Taking is a daemon taking a held connection over, with what its holder gave it.
type Taking struct {
	Dev    int               // the connection's /dev/fuse descriptor (DevFD)
	Init   fuse.InitIn       // the kernel's INIT, as the first daemon read it
	Fatal  map[uint64]uint32 // resent requests a daemon died serving: answered EIO (ResendGuard)
	Log    *nodelog.Log      // the node log (NodesFD)
	User   bool              // a normal user's mount: the old daemon's handles serve reads and writes too
	Holder *rpc.Client       // the daemon's socket to its holder

	reopen *Reopened
	nodeFS fuse.RawFileSystem
	server *fuse.Server
}

// Server makes go-fuse's server of the connection from the kept INIT: its requests gated, the old daemon's files
// opened again (a root mount's for lock requests only: the kernel reads and writes them itself), resent requests
// guarded and answered as if made once.
func (t *Taking) Server(opts *fuse.MountOptions, nodeFS, raw fuse.RawFileSystem, tree *nodes.Tree) (*Gate, *fuse.Server, error) {
	g := &Gate{}
	opts.RequestGate = g
	t.reopen = NewReopened(raw)
	t.reopen.Tree = tree
	raw = t.reopen
	if !t.User {
		raw = LockReopened{Reopened: t.reopen}
	}
	raw = ResendIdempotent{RawFileSystem: raw}
	opts.ResendGuard = ResendGuard{Holder: t.Holder, Fatal: t.Fatal}
	server, err := fuse.ResumeServer(raw, t.Dev, "", opts, t.Init)
	if err != nil {
		return nil, nil, fmt.Errorf("take the connection over: %w", err)
	}
	t.nodeFS, t.server = nodeFS, server
	return g, server, nil
}

// Serve, confined by now (a root mount's), restores the node ids the kernel holds, asks the kernel to resend what
// the dead daemon had read, serves, and tells the holder (Served, not waited for).
func (t *Taking) Serve() {
	recorded, handles, err := t.Log.Read()
	t.reopen.SetBelow(handles)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sessionfs: %v: the files the kernel holds from the daemon before get errors\n", err)
	}
	restored, later := gofs.RestoreNodes(t.nodeFS, recorded, handles)
	gofs.RestorePassthrough(t.nodeFS, t.Log.PassthroughHandles())
	gofs.RecordNodes(t.nodeFS, t.Log)
	if st := t.server.NotifyResend(); !st.Ok() {
		fmt.Fprintf(os.Stderr, "sessionfs: the kernel resends nothing (%v; Linux 6.9 does): the requests the daemon before had read wait for good\n", st)
	}
	go t.server.Serve()
	t.Holder.Go("Holder.Served", ServedArgs{Restored: restored, Later: later}, nil, make(chan *rpc.Call, 1))
}
