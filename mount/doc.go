// Package mount mounts a sessionfs store as a FUSE filesystem and manages the mount's life: start-up, binds of
// sessions' heavy folders over it, the watcher that keeps the kernel's caches true to the store, unmount and
// stale-mount recovery. With the takeover (takeover.go) a helper holds the mount's FUSE connection: a daemon killed
// is replaced by one that takes the connection over, reading the node ids the kernel holds from the node log
// (package mount/takeover/nodelog), and an upgrade hands the mount to a new build. Its FUSE nodes are package
// mount/nodes.
//
// The files: the Mount type, then the others in the order a start-up meets them (helper_service.go and bindlimit.go
// serve the helper and the binder once the mount serves):
//
//	mount.go           Mount: Wait, Unmount, Detach, Abort, Users (through its control)
//	start.go           Start and its steps, in order (below)
//	keep.go            the start-up's second mode, continuity (keeper): plainMount, the connection ends with the
//	                   process; keep_held.go's firstHeld and takeover.go's takenOver, it outlives the process
//	mountpoint.go      the checks before mounting: FUSE, the places, an empty mountpoint (a stale mount cleared)
//	options.go         Options, their defaults (settle), and go-fuse's options made of them
//	helper.go          a confined mount's privileged helper process: started (startHelper) and run (RunHelper)
//	idle.go            the helper started in the idle scheduling class, and taken out of it
//	helper_service.go  what the helper does when the serving process asks (helperService, over net/rpc)
//	binds.go           the binds interface; binder: this process's binds of sessions' folders over the mount
//	bindlimit.go       the binder's limit: the least recently used sessions released
//	viewbinds.go       the binder's transcript views in use, bound; taken back; released when idle
//	remotebinder.go    remoteBinder: a confined mount's binds, asked of its helper
//	watch.go           the watcher: changes behind the mount, to the tree and the binder
//	opendir.go         folders served without OPENDIR (the kernel caches their listings)
//	splice.go          what go-fuse opens before the confinement takes it away
//	procs.go           GOMAXPROCS kept above go-fuse's readers
//	control.go         control (unmount, detach, abort, users): in this process (localControl) or through the
//	                   helper (helperControl)
//	scratch.go         the confined daemon's private scratch folder (those of daemons gone removed)
//	keep_held.go       a held mount's daemon (heldDaemon) and the first one's keeper (firstHeld): the node log made,
//	                   the helper given copies of the connection and the log, the INIT kept
//	takeover.go        --takeover (the default): the helper holds the connection and starts a daemon that takes it
//	                   over when the serving one dies (RunTakeover, takenOver), which resumes without INIT
//	takeover_state.go  each takeover logged and bounded (10 s, then the connection ends); the state doctor reads
//	takeover/nodelog/  the node log (package nodelog): the node ids handed to the kernel and their lookup counts,
//	                   in a memory file the helper holds, for that daemon; its ring of the requests that change a
//	                   folder, noted before they are made
//	resend.go          that daemon's answers to the requests the kernel resends, as if each were made once
//	lockowners.go      POSIX lock owners' descriptors sent to the holder, kept there, adopted by the next daemon
//	lockowners_handles.go lock requests through an old daemon's file handles
//	upgrade.go         sessionfs mount of a new build hands a held mount over: the holder's control socket, and
//	                   the asking binary's side (Upgrade)
//	holder_exec.go     the holder's side: the daemon told to go, the new binary executed in the holder's place
//	holder_state_locks.go the lock owners carried to that binary (inline, or in a memory file when many)
//	holder_move.go     a holder moved to another pid namespace (the CSI plugin's DaemonSet update)
//	holder_serve.go    the holder serves a daemon until its socket ends (not until its calls waiting on the mount do)
//	holder_user.go     a normal user's mount held too: mounted through fusermount3 here, its holder as that user
//	handover.go        a held daemon's side: it goes on handoverSignal, once the requests in flight finished
//	handover_gate.go   the gate every request passes (go-fuse's RequestGate), which a hand-over closes
//	handover_handles.go a normal user's daemon that took over opens the old daemon's files again
//	*_fault_on.go      the fault-injection build's (-tags faultinject) hooks: a takeover that stalls or dies (and
//	                   takeover/nodelog/fault_on.go: a small node log); *_fault_off.go: none
//
// and what the CLI asks of a mount it does not serve:
//
//	unmount.go         Unmount of a mountpoint, a busy mount detached lazily
//	bindtable.go       the binds over a mount as the mount table shows them
//	stale.go           a dead or hung mount told (probe), its connection aborted (fusectl)
//	find.go            a store's mount, live or stale
//	serving.go         the process serving a mount, from the kernel
//	users.go           the processes keeping a mount busy
//	shared.go          stores shared with other hosts (a short cache timeout)
//	notify.go          systemd's readiness
//
// Start has one start-up with two modes, as virtiofsd's sandbox mode: the confinement (opts.Confine; as root,
// confined unless its Mode is Off) and the continuity (the keeper, keep.go: plain, or held with opts.Takeover,
// the default). Its steps, each a method of startup in start.go, ask the keeper only where continuity changes
// what they do; "confined" steps do nothing in an unconfined mount:
//
//  1. boundCapabilities (confined): the capability bounding set, while the process is quiet.
//  2. prepare: FUSE there, the places, the mountpoint ready; the options' defaults settled, go-fuse's made.
//  3. openDevice: the keeper's part (held: the node log made; a normal user's held mount mounted here, through
//     fusermount3), then, confined, a /dev/fuse descriptor opened.
//  4. launchHelper (confined, or held): the helper starts meanwhile (held, holding copies of the descriptor, the
//     node log and the lock owners' socket; a normal user's is that user's, and binds nothing).
//  5. openTree: the store's tree of nodes.
//  6. mountDevice (confined): the mount made with mount(2) on the /dev/fuse descriptor.
//  7. connectHelper (with a helper): the helper is up.
//  8. wireBinds: the binder into the tree (binds: this process's binder as root, the helper's remoteBinder
//     confined, none for a normal user).
//  9. watchStore: the watcher.
//  10. newServer: go-fuse's server of the root node, wrapped by the keeper (held: gated, recorded, resent); an
//     unconfined plain mount's go-fuse mounts (mount(2) as root, fusermount3 otherwise) and serves now.
//  11. serve: ready runs; held, the helper keeps the INIT; confined, the process confines itself
//     (confine.Serving); then it serves (a connection taken over: as its keeper does).
//  12. served: the Mount, with its control (control.go), the tree's pruner and a spare P.
//
// A step that fails undoes what the steps before it made (rollback), up to serve. A daemon taking a connection
// over runs the same steps with takenOver as its keeper, on the descriptor, node log and helper it is given: it
// mounts nothing and starts no helper, and serves once it restored the kernel's node ids and asked for a resend.
package mount
