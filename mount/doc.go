// Package mount mounts a sessionfs store as a FUSE filesystem and manages the mount's life: start-up, binds of
// sessions' heavy folders over it, the watcher that keeps the kernel's caches true to the store, unmount and
// stale-mount recovery. A held mount (the takeover, package mount/takeover) outlives its daemon: the helper holds
// the FUSE connection, a daemon killed is replaced by one that takes the connection over, and an upgrade hands the
// mount to a new build; this package starts it through its keepers (keep*.go). Its FUSE nodes are package
// mount/nodes; what the kernel shows of a mount and the processes holding its connection, package mount/inspect.
//
// The files: the Mount type, then the others in the order a start-up meets them (helper_service.go and bindlimit.go
// serve the helper and the binder once the mount serves):
//
//	mount.go           Mount: Wait, Unmount, Detach, Abort, Users (through its control)
//	start.go           Start and its steps, in order (below)
//	keep.go            the start-up's second mode, continuity (keeper): plainMount, the connection ends with the
//	                   process; firstHeld and takenOver, it outlives the process
//	mountpoint.go      the checks before mounting: FUSE, the places, an empty mountpoint (a stale mount cleared)
//	options.go         Options, their defaults (settle), and go-fuse's options made of them
//	helper.go          a confined or held mount's helper process: started (startHelper) and run (RunHelper), with
//	                   the holder (takeover.Holder) beside its service when the mount is held
//	idle.go            the helper started in the idle scheduling class, and taken out of it
//	dockervolumes.go   the Docker volume plugin (package dockervolume) the helper serves with --docker-volumes
//	helper_service.go  what the helper does when the serving process asks (helperService, over net/rpc), and what
//	                   its holder asks of it (holderHost)
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
//	keep_handover.go   a held daemon's hand-over: it goes on takeover.HandoverSignal, once its requests finished
//	fusermount.go      a normal user's mount, held too: mounted through fusermount3 here, its holder as that user
//	run_takeover.go    a daemon the holder starts to take the connection over (RunTakeover), and its keeper:
//	keep_takeover.go   takenOver, which resumes without INIT: node ids restored, the old lock owners adopted
//	run_takeover_fault_on.go the fault-injection build's (-tags faultinject) hook: a takeover that stalls or dies
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
