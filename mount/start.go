package mount

import (
	"errors"
	"fmt"
	"net/rpc"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/confine"
	"github.com/sessionfs/sessionfs/dockervolume"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/mount/nodes"
)

// Start mounts store at mountpoint (creating the folder if need be) and serves it from this process until
// Unmount. opts.Confine is the mode, as virtiofsd's sandbox mode is:
//
//   - confined (root, and Mode On or Strict): this process mounts, then confines itself (package confine) before
//     it reads its first request, and asks a privileged helper it starts for what needs more: binding sessions'
//     folders, unmounting, aborting the connection (helper.go);
//   - unconfined (Mode Off, or not root): this process does it all; as root it mounts with mount(2) and binds
//     sessions' folders itself (binds.go), as a normal user it mounts through fusermount3 and binds nothing.
//
// ready, when set, runs once the mount is made and before the confinement (it may need what the confinement
// takes away: systemd's notify socket, say); an unconfined mount runs it once it serves.
func Start(store *layout.Store, mountpoint string, opts Options, ready func()) (*Mount, error) {
	s := &startup{store: store, mountpoint: mountpoint, opts: opts, given: opts, confined: os.Geteuid() == 0 && opts.Confine.Mode != confine.Off}
	s.keep = keeperFor(s.confined, opts.Takeover)
	return s.start(ready)
}

// keeperFor is a new mount's continuity (keep.go): held when asked (Options.Takeover), as root when confined (the
// helper holds the connection) and as a normal user (a holder of that user's); plain otherwise.
func keeperFor(confined, takeover bool) keeper {
	switch {
	case takeover && confined:
		return &firstHeld{}
	case takeover && os.Geteuid() != 0:
		return &firstHeld{heldDaemon{user: true}}
	}
	return plainMount{}
}

// start runs the steps of a start-up, or of a daemon taking a connection over (its keeper says: keep.go).
func (s *startup) start(ready func()) (*Mount, error) {
	steps := []func() error{
		s.boundCapabilities, // confined: the bounding set, while the process is quiet
		s.prepare,           // the places and the mountpoint checked, the options' defaults settled
		s.openDevice,        // confined: /dev/fuse opened (and the node log made, to keep the connection)
		s.launchHelper,      // confined: the helper starts meanwhile
		s.openTree,          // the store's tree of nodes
		s.mountDevice,       // confined: the mount made on a /dev/fuse descriptor
		s.connectHelper,     // confined: the helper is up
		s.wireBinds,         // the binder the tree and the watcher tell of sessions: this process's or the helper's
		s.watchStore,        // the watcher of the store
		s.newServer,         // go-fuse's server (unconfined: the mount made, and served)
	}
	for _, step := range steps {
		if err := step(); err != nil {
			s.rollback()
			return nil, err
		}
	}
	// Nothing is rolled back from here on: a confined process may no longer undo what it made.
	if err := s.serve(ready); err != nil {
		return nil, err
	}
	if s.tree.IndexWatch != nil {
		s.tree.IndexWatch.Start() // once serving: its arming never delays the mount
	}
	s.keep.awaitHandover(s) // held: handed over to a new binary when it asks
	return s.served(), nil
}

// startup is a mount on its way: what Start's steps made so far, and how to undo it should a later step fail.
type startup struct {
	store      *layout.Store
	mountpoint string
	opts       Options
	given      Options // opts as given, before their defaults were settled: a takeover settles them again
	confined   bool
	keep       keeper // how long the connection lasts: with this process, or past it (keep.go)

	mnt, shared string
	scratch     func()        // removes the serving process's scratch folder (confined)
	watched     time.Duration // the store's names' cache timeout while the watcher follows them (0: opts.Timeout)
	tree        *nodes.Tree
	// confined: the helper, once started (helperStarted closed): a client of it, its pid, or why it did not start
	helperStarted chan struct{}
	helper        *rpc.Client
	helperPID     int
	helperErr     error
	fuse          *gofs.Options // go-fuse's options (options.go)
	dev           int           // the /dev/fuse descriptor mounted, when this process opened it (ownDevice)
	ownDevice     bool
	serving       bool    // go-fuse made the mount and serves it (an unconfined plain mount)
	binder        *binder // unconfined as root: this process's binder
	binds         binds   // the binder the tree and the watcher tell (nil: the mount binds nothing)
	watcher       *watcher
	root          *nodes.Root
	procs         int // GOMAXPROCS when go-fuse sized its readers by it (procs.go)
	server        *fuse.Server
	confinement   string
	undo          []func() // in the order made; run backwards
}

func (s *startup) onRollback(undo func()) { s.undo = append(s.undo, undo) }

func (s *startup) rollback() {
	for i := len(s.undo) - 1; i >= 0; i-- {
		s.undo[i]()
	}
}

// boundCapabilities drops, for a confined mount, what the bounding set need not keep: first, while the process is
// quiet; the helper is started with what it leaves.
func (s *startup) boundCapabilities() error {
	if !s.confined {
		return nil
	}
	if err := s.opts.Confine.Check(); err != nil {
		return err
	}
	if err := confine.Bound(s.opts.Confine); err != nil {
		return fmt.Errorf("confine the serving process: %w", err)
	}
	return nil
}

// prepare checks FUSE, the places and the mountpoint (mountpoint.go), raises the file limit, settles the options'
// defaults and makes go-fuse's of them (options.go).
func (s *startup) prepare() (err error) {
	if s.mnt, err = filepath.Abs(s.mountpoint); err != nil {
		return err
	}
	if err := CheckFUSE(); err != nil {
		return err
	}
	nodes.RaiseFileLimit()   // the callers' shares of descriptors are sized from it (nodes/opens.go)
	if s.keep.makesMount() { // else the mountpoint is the mount it serves: nothing may touch it before it serves
		if err := checkPlaces(s.store, s.mnt); err != nil {
			return err
		}
		if name := s.opts.DockerVolumes; name != "" && s.confined {
			// Said here, before anything is mounted: the helper that claims it would fail after the mount.
			release, err := dockervolume.Claim(name)
			if err != nil {
				return fmt.Errorf("--docker-volumes: %w", err)
			}
			release()
		}
		if err := prepareMountpoint(s.mnt); err != nil {
			return err
		}
	}
	s.shared, s.watched = s.opts.settle(s.store)
	s.fuse = s.opts.fuseOptions(s.store, s.confined)
	return nil
}

// launchHelper starts a confined mount's helper in the background: its fork and exec hold up only the thread that
// makes them. It binds nothing before it is told to begin, once the mount serves.
func (s *startup) launchHelper() error {
	if s.opts.DockerVolumes != "" && !s.confined {
		return errors.New("--docker-volumes: the plugin is served by a confined root mount's privileged helper (run the mount as root)")
	}
	if !s.keep.hasHelper(s.confined) {
		return nil
	}
	cfg := helperConfig{Store: s.store.Root, Mountpoint: s.mnt, MaxBinds: s.opts.MaxBinds, ReadOnly: s.opts.ReadOnly,
		DockerVolumes: s.opts.DockerVolumes}
	if !s.confined {
		cfg.MaxBinds = 0 // a normal user's holder binds nothing
	}
	keep, passed, err := s.keep.helperHolds(s, &cfg) // what a held mount's helper holds
	if err != nil {
		return err
	}
	s.helperStarted = make(chan struct{})
	go func() {
		defer close(s.helperStarted)
		s.helper, s.helperPID, s.helperErr = startHelper(cfg, keep...)
		passed()
	}()
	s.onRollback(func() { // the helper ends when its socket closes
		<-s.helperStarted
		if s.helper != nil {
			s.helper.Close()
		}
	})
	return nil
}

// openTree opens the store's tree of nodes as the options and the watcher want it.
func (s *startup) openTree() error {
	tree, err := nodes.NewTree(s.store)
	if err != nil {
		return fmt.Errorf("open the store: %w", err)
	}
	tree.Mountpoint, tree.ReadOnly = s.mnt, s.opts.ReadOnly
	tree.Timeout, tree.WatchedTimeout = s.opts.Timeout, s.watched
	s.tree = tree
	s.keep.treeOpened(tree)
	s.onRollback(func() { tree.Close() })
	return nil
}

// mountDevice makes a confined mount now, on a /dev/fuse descriptor of its own which the server takes over (go-fuse
// makes an unconfined one as it starts serving: newServer).
func (s *startup) mountDevice() error {
	if !s.confined || !s.keep.makesMount() {
		return nil
	}
	if err := mountDirect(s.mnt, &s.fuse.MountOptions, s.dev); err != nil {
		return mountError(s.mnt, err)
	}
	s.onRollback(func() { _ = syscall.Unmount(s.mnt, syscall.MNT_DETACH) })
	return nil
}

// openDevice opens a confined mount's /dev/fuse descriptor, before the helper starts, after what its keeper opens
// (a held mount's node log, of which the helper holds a copy with the descriptor's).
func (s *startup) openDevice() error {
	opened, err := s.keep.openDevice(s)
	s.ownDevice = opened
	if err != nil || opened || !s.confined {
		return err
	}
	// A plain descriptor, not an *os.File: go-fuse takes it over (a File's finalizer would close it under it).
	dev, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open /dev/fuse: %w", err)
	}
	s.dev, s.ownDevice = dev, true
	s.onRollback(func() { unix.Close(dev) })
	return nil
}

// mountDirect mounts a FUSE connection on dev at mnt with mount(2), with the options go-fuse would give it.
func mountDirect(mnt string, mo *fuse.MountOptions, dev int) error {
	data := []string{
		fmt.Sprintf("fd=%d", dev),
		fmt.Sprintf("rootmode=%o", syscall.S_IFDIR),
		fmt.Sprintf("user_id=%d", os.Geteuid()),
		fmt.Sprintf("group_id=%d", os.Getegid()),
		fmt.Sprintf("max_read=%d", mo.MaxWrite),
	}
	data = append(data, mo.Options...)
	if mo.AllowOther {
		data = append(data, "allow_other")
	}
	return syscall.Mount(mo.FsName, mnt, FSType, mo.DirectMountFlags, strings.Join(data, ","))
}

// connectHelper waits for a confined mount's helper to be started.
func (s *startup) connectHelper() error {
	if s.helperStarted == nil {
		return nil
	}
	<-s.helperStarted
	if s.helperErr != nil {
		return fmt.Errorf("start the privileged helper: %w", s.helperErr)
	}
	return nil
}

// wireBinds gives the tree and the watcher the mount's binder: a confined mount's is the helper's
// (remotebinder.go), an unconfined root mount's is this process's own (binds.go), made with mount(2)'s new API. A
// normal user's mount binds nothing: it goes through fusermount3, and all of it through FUSE.
func (s *startup) wireBinds() error {
	switch {
	case s.opts.MaxBinds <= 0:
		return nil
	case s.confined:
		s.binds = newRemoteBinder(s.helper)
	case os.Geteuid() == 0:
		s.binder = newBinder(s.mnt, s.tree.Sessions(), s.opts.MaxBinds, s.opts.ReadOnly, lastUsedIn(s.tree))
		s.onRollback(s.binder.close)
		s.binds = s.binder
	default:
		return nil
	}
	s.tree.Binder = s.binds
	s.binds.begin(s.tree)
	return nil
}

// lastUsedIn is when each session was last used through the mount, as tree saw it.
func lastUsedIn(tree *nodes.Tree) func(ids []string) map[string]int64 {
	return func(ids []string) map[string]int64 {
		out := make(map[string]int64, len(ids))
		for _, id := range ids {
			out[id] = tree.LastUsed(id)
		}
		return out
	}
}

// watchStore starts the watcher, which tells the tree and the binder of changes made behind the mount.
func (s *startup) watchStore() error {
	wa, err := startWatcher(s.tree, s.binds)
	if err != nil {
		return fmt.Errorf("watch the store: %w", err)
	}
	s.watcher = wa
	s.onRollback(wa.close)
	// What ls and find ask the mount (nodes.IndexFile): not on a store other hosts change too, whose changes no
	// watch here sees. Without it they stat every session's names, as with no mount.
	if s.shared == "" {
		if iw, err := s.store.WatchIndex(); err == nil {
			s.tree.IndexWatch, wa.index = iw, iw
		}
	}
	return nil
}

// newServer makes go-fuse's server of the mount's root node, folders without OPENDIR (opendir.go). A confined
// mount's serves the descriptor mounted already, once serve has confined this process; go-fuse makes an
// unconfined mount now and serves it at once.
func (s *startup) newServer() error {
	s.root = nodes.NewRoot(s.tree)
	// Modes reach us already masked by the caller's umask; the daemon's own must not mask them again.
	syscall.Umask(0)
	s.procs = runtime.GOMAXPROCS(0)
	nodeFS := gofs.NewNodeFS(s.root, s.fuse)
	raw, err := s.keep.wrap(s, nodeFS, newNoOpendir(nodeFS))
	if err != nil || s.server != nil {
		return err // a connection taken over has its server already
	}
	if s.ownDevice {
		server, err := fuse.NewServer(raw, fmt.Sprintf("/dev/fd/%d", s.dev), &s.fuse.MountOptions)
		s.server = server
		return err
	}
	server, err := fuse.NewServer(raw, s.mnt, &s.fuse.MountOptions)
	if err != nil {
		return mountError(s.mnt, err)
	}
	go server.Serve()
	if err := server.WaitMount(); err != nil {
		return mountError(s.mnt, err) // the serve loop ends with the failed mount
	}
	s.server, s.serving = server, true
	return nil
}

// serve runs ready and serves. A confined mount confines this process first, before the first request is read:
// everything it needs outside the store is open by now.
func (s *startup) serve(ready func()) error {
	s.keep.catchHandover() // before the holder is told anything that lets it ask for a hand-over
	if ready != nil {
		ready()
	}
	if s.binder != nil {
		go s.binder.wantRecent()
	}
	if s.serving {
		return nil // an unconfined plain mount: go-fuse serves it since newServer
	}
	initialized := s.keep.initialized(s) // held: the helper keeps the INIT for a daemon that takes over
	if s.confined {
		if err := s.confine(); err != nil {
			return err
		}
	}
	if served, err := s.keep.serve(s); served {
		return err
	}
	go s.server.Serve()
	if err := s.server.WaitMount(); err != nil {
		return err
	}
	// The kernel asks POLL once: a request from the helper makes it, so that go-fuse can answer ENOSYS. Not
	// waited for: the helper is still starting (its Go runtime's init), and the mount serves meanwhile; the
	// lookups made before it is up are sent to it once it is.
	s.helper.Go("Helper.PollHack", struct{}{}, nil, make(chan *rpc.Call, 1))
	// Serving is said once the holder has the INIT: a daemon killed before it did would end the mount
	// (awaitInit, keep_handover.go).
	awaitInit(initialized)
	return nil
}

// confine confines this process before the first request is read: everything it needs outside the store is open
// by now.
func (s *startup) confine() error {
	openSpliceSink()
	// Confined, the daemon writes nowhere but the store and a private folder of its own (0700, in the system's
	// temporary folder): there it copies a session's opencode database to read it (the text view). Never in the
	// store: a read-only mount leaves the store as it was.
	scratch, remove, err := makeScratch()
	if err == nil {
		_ = os.Setenv("TMPDIR", scratch)
		s.scratch = remove
	}
	// The helper leaves the idle class before SYS_NICE goes: on a busy machine an idle process gets almost no CPU,
	// and its binds (and the unmount it makes) must not wait for the machine to go quiet.
	report, err := confine.Serving(s.store.Root, scratch, s.opts.Confine, func() { wakeHelper(s.helperPID) })
	if err != nil {
		// Serve nothing unconfined: the mount goes (the helper can still unmount), and so does this process.
		_ = s.helper.Call("Helper.Detach", struct{}{}, nil)
		if s.scratch != nil {
			s.scratch()
		}
		return fmt.Errorf("confine the serving process: %w", err)
	}
	s.confinement = report.String()
	return nil
}

// served is the Mount that serves: a P kept spare of go-fuse's readers (procs.go), the tree pruned past
// MaxNodes, and its control (control.go).
func (s *startup) served() *Mount {
	spareProcs(s.procs)
	done := make(chan struct{})
	go s.tree.Prune(s.root.Sessions(), s.opts.MaxNodes, done)
	var ctl control = &helperControl{mnt: s.mnt, helper: s.helper}
	if s.helper == nil {
		ctl = newLocalControl(s.mnt, s.server, s.binder)
	}
	return &Mount{Mountpoint: s.mnt, Store: s.store, Shared: s.shared, Timeout: s.opts.Timeout, Binding: s.binds != nil,
		Confinement: s.confinement, server: s.server, watcher: s.watcher, tree: s.tree, ctl: ctl, done: done, scratch: s.scratch}
}
