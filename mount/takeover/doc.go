// Package takeover keeps a held mount's FUSE connection alive across its daemon's death and its upgrades: a daemon
// killed -9 is replaced, a new build takes the mount over, and the CSI plugin's holder moves to its next pod, while
// the mount's users wait a moment and go on. Package mount starts it (its keepers: keep_held.go, keep_takeover.go);
// this package holds the holder's side and the daemon's pieces of the protocol.
//
// # Words
//
// The holder: the mount's privileged helper process (package mount's RunHelper) holding a copy of the connection's
// /dev/fuse descriptor (DevFD), of the node log (NodesFD) and of the lock owners' socket (LocksFD), and the kernel's
// INIT as the first daemon read it. The kernel keeps a FUSE connection while any descriptor of it is open and
// queues its requests meanwhile, so the connection outlives the daemon. Holder is its state and its calls, hosted by
// the helper beside the helper's own service (Host: what it asks of it).
//
// Takeover: when the serving daemon's socket closes and the mount is still there and not being ended, the holder
// starts this binary again as selfexec.Takeover with the three descriptors (Holder.start). That daemon makes the tree
// as a start-up does, confines itself, restores the node ids the kernel holds, asks the kernel to resend what the
// dead daemon had read and not answered, and serves.
//
// The node log (package nodelog): the node ids a daemon handed the kernel, with their names and lookup counts, in a
// memory file the holder keeps; the next daemon looks each up again under the same id. Restore later: a node whose
// folder chain cannot be looked up at once is restored when the kernel first names it (go-fuse's patch).
//
// Resend (FUSE_NOTIFY_RESEND, Linux 6.9): the kernel sends again, to the daemon after, the requests the dead one had
// read. A change is noted before it is made (ResendIdempotent), so a resent change is answered as if made once; and a
// resent request that kills its daemon too is answered EIO by the next (ResendGuard, the holder's fatal list).
//
// Hand-over: the daemon stops on the holder's word (HandoverSignal) once its requests in flight finished (Gate), and
// the holder carries what it holds to a new binary (Upgrade: it executes the binary sent over its control socket in
// its own place, holder_exec.go) or to a holder in another pid namespace (TakeHolder: holder_move.go). The format of
// what crosses is handoverFormat; the node log's is nodelog.Version: an asker refuses a state it does not read before
// anything stops.
//
// The lock owners: the descriptors behind POSIX locks taken through the mount, sent to the holder as they are made
// (LockSocket) and adopted by the next daemon, so that locks outlive a daemon (lockowners.go). A normal user's mount
// opens the old daemon's file handles again (Reopened).
//
// # States
//
// A holder's daemon is serving (it said Initialized or Served), or starting (started to take over, not serving yet:
// bounded by TakeoverBound, then the connection is ended), or gone. Daemons that die before they serve,
// maxFailedTakeovers in a row (a crash loop), or a first one that dies before the INIT, end the connection: the
// mount's users get errors instead of waiting for good, and the next mount clears it as a stale one. A daemon
// killed while it serves is replaced as often as it is killed. The holder takes nothing from a session: the INIT
// and the log come from the daemon, which is confined; the next daemon checks the log as it would a request, after
// it confined itself. Held is what doctor is told (HeldBy).
//
// The files:
//
//	holder.go          Holder, its Host, and Serve: the daemons it serves one after the other
//	holder_serve.go    the holder serves a daemon until its socket ends, or its main thread
//	takeover.go        a daemon gone: the next one started (takeOver) and bounded, or the connection ended
//	holder_calls.go    what a daemon tells its holder: it serves (Initialized, Resumed, Served)
//	takeover_state.go  each takeover logged; Held, the state doctor reads (HeldBy)
//	config.go          the helper's configuration, handed on whole
//	daemon.go          a held mount's daemon through go-fuse's takeover patch: the first one (First), one taking
//	                   over (Taking: its server resumed, the node ids restored)
//	resend.go          a daemon's answers to requests the kernel resends, as if each were made once; a resent
//	                   request that killed its daemon answered EIO by the next (ResendGuard, Resending)
//	lockowners.go      the lock owners' descriptors: the holder's table, and their messages
//	lockowners_socket.go the daemon's end (LockSocket)
//	lockowners_handles.go, handover_handles.go  an old daemon's file handles opened again (Reopened)
//	handover_gate.go   the gate every request passes (go-fuse's RequestGate), which a hand-over closes
//	upgrade.go         the control socket, and Upgrade: a new build asks for the mount
//	holder_exec.go     the holder's side: the daemon told to go, the new binary executed in the holder's place
//	holder_state_locks.go the lock owners carried to that binary
//	holder_move.go     TakeHolder: a holder moved to another pid namespace (the CSI plugin's DaemonSet update)
//	fault_on.go        the fault-injection build's (-tags faultinject) hook: a daemon that dies after a change
package takeover
