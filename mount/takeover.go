package mount

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/mount/takeover/nodelog"
)

// A confined mount with Options.Takeover outlives its serving process (issue 42). The kernel keeps a FUSE
// connection while any descriptor of its /dev/fuse file is open, and queues the requests meanwhile. So:
//
//   - the daemon opens /dev/fuse and a node log (nodelog.New) before it starts its helper, which gets copies of
//     both (descriptors 4 and 5) and, once the daemon read it, the kernel's INIT (Helper.Initialized);
//   - the helper is the holder: when the daemon's socket closes and the mount is still there and not being
//     ended, it starts this binary again as TakeoverArg with the three (holder.start);
//   - that daemon makes the tree as a start-up does, confines itself, looks the logged node ids up again (go-fuse's
//     RestoreNodes, third_party/go-fuse), asks the kernel to resend what the dead daemon had read and not answered
//     (FUSE_NOTIFY_RESEND), and serves: the mount's users waited, and go on.
//
// The helper takes nothing from a session: the INIT and the log come from the daemon, which is confined; the next
// daemon checks the log as it would a request (it is one, replayed), after it confined itself. Daemons that die
// before they serve (maxFailedTakeovers in a row: a crash loop), or a first one that dies before the INIT, end
// the connection: the mount's users get errors instead of waiting for good, and the next mount clears it as a
// stale one. A daemon killed while it serves is replaced as often as it is killed.

// TakeoverArg is argv[1] of a daemon the helper starts to take the connection over: main hands it to
// RunTakeover.
const TakeoverArg = "__takeover"

// takeoverEnv carries a taking-over daemon's configuration (takeoverConfig, JSON).
const takeoverEnv = "SESSIONFS_TAKEOVER"

// The holder's descriptors (the helper's: after its socket, 3) and a taking-over daemon's (after its own).
const (
	holderDev   = 4
	holderNodes = 5
)

// maxFailedTakeovers is how many daemons in a row may die before they serve.
const maxFailedTakeovers = 3

// takeoverConfig is what a taking-over daemon is told.
type takeoverConfig struct {
	Store, Mountpoint string
	Options           Options
	Init              fuse.InitIn
	Fatal             map[uint64]uint32 `json:",omitempty"` // resent requests a daemon died serving (resend_guard.go)
}

// holder is the helper's hold on the connection.
type holder struct {
	cfg        helperConfig
	dev, nodes *os.File   // kept referenced: their descriptors stay open for the helper's life
	locks      *heldLocks // the lock owners' descriptors (lockowners.go)

	mu       sync.Mutex
	init     *fuse.InitIn
	serving  bool // the last daemon started serves (Initialized, Resumed)
	failures int  // daemons in a row that died before they served

	state     Held      // what doctor is told (takeover_state.go), carried across upgrades
	upgrading bool      // the next daemon to serve takes over in an upgrade
	replaced  time.Time // when the last daemon was started to take over
	attempt   int       // daemons started to take over so far: the bound on each is its own
}

func newHolder(cfg helperConfig) *holder {
	unix.CloseOnExec(holderDev) // passed to a taking-over daemon explicitly, never to anything else
	unix.CloseOnExec(holderNodes)
	h := &holder{cfg: cfg, dev: os.NewFile(holderDev, "/dev/fuse"), nodes: os.NewFile(holderNodes, "sessionfs-nodes"), locks: newHeldLocks()}
	if _, upgraded := os.LookupEnv(upgradeEnv); !upgraded && isSocket(holderLocks) { // the first daemon's (lockowners.go)
		unix.CloseOnExec(holderLocks)
		h.locks.attach(holderLocks)
	}
	return h
}

// Initialized keeps the kernel's INIT as the first daemon read it, for a daemon that takes over.
func (s *helperService) Initialized(init fuse.InitIn, _ *struct{}) error {
	if s.holder == nil {
		return errors.New("this helper does not hold the mount's connection")
	}
	defer s.saveHeld() // once unlocked: the mount is held
	s.holder.mu.Lock()
	defer s.holder.mu.Unlock()
	if s.holder.init == nil { // the first daemon's: a later one is told it, never tells it
		s.holder.init, s.holder.serving = &init, true
	}
	s.listenControlOnce() // the mount is there: a new binary may ask for it (upgrade.go), once the daemon says it serves
	return nil
}

// Resumed: the daemon that took the connection over serves.
func (s *helperService) Resumed(_ struct{}, _ *struct{}) error {
	if s.holder == nil {
		return errors.New("this helper does not hold the mount's connection")
	}
	s.holder.mu.Lock()
	s.holder.serving, s.holder.failures = true, 0
	s.holder.mu.Unlock()
	s.upgradeServed() // an upgrade's asker is told (holder_exec.go)
	return nil
}

// end says the mount is being ended: no daemon takes over.
func (s *helperService) end() {
	s.mu.Lock()
	s.ending = true
	s.mu.Unlock()
}

// takeOver runs once the serving daemon is gone: it starts a daemon that takes the connection over and returns
// the socket to it and its pid, or nil when the mount ends (or is not held).
func (s *helperService) takeOver() (net.Conn, int, error) {
	h := s.holder
	if h == nil {
		return nil, 0, nil
	}
	s.mu.Lock()
	ending := s.ending
	s.mu.Unlock()
	if ending || !s.mounted() {
		s.removeHeld()
		return nil, 0, nil // the mount ended: the connection goes with this process
	}
	h.locks.detach() // what the daemon gone sent, all of it: the next one is given it
	s.execUpgrade()  // a hand-over asked for (upgrade.go): this process becomes the new binary, unless that fails
	fatal := s.noteFatal()
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.serving {
		h.failures++
	}
	why := h.cannotTakeOver()
	if why == nil {
		h.serving = false
		conn, pid, err := h.start(fatal)
		if err == nil {
			s.replacing(pid)
			return conn, pid, nil
		}
		why = err
	}
	// Never a hang: the users get errors, and the next mount clears the mount as a stale one.
	s.removeHeld()
	if err := s.Abort(struct{}{}, nil); err != nil {
		return nil, 0, fmt.Errorf("%v, and the connection could not be ended: %v", why, err)
	}
	return nil, 0, fmt.Errorf("%v: the mount's connection is ended (sessionfs mount clears it)", why)
}

// keptInit is the kernel's INIT the holder keeps, which a binary it hands the connection to resumes from.
func (h *holder) keptInit() (*fuse.InitIn, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.init == nil {
		return nil, errors.New("no INIT was kept")
	}
	return h.init, nil
}

// cannotTakeOver says why no daemon may take the connection over (h.mu held), or nil: then one is started.
func (h *holder) cannotTakeOver() error {
	switch {
	case h.init == nil:
		return errors.New("the daemon died before it initialized the mount")
	case h.init.Flags64()&fuse.CAP_HAS_RESEND == 0:
		// The requests the dead daemon had read would wait for good: the users get an error instead, as before.
		return errors.New("the kernel cannot resend the requests the daemon had read (FUSE_NOTIFY_RESEND, Linux 6.9)")
	case h.failures >= maxFailedTakeovers:
		return fmt.Errorf("%d daemons in a row died before they served", h.failures)
	}
	return nil
}

// exitPoll is how often the helper looks whether its daemon was killed (closeOnExit).
const exitPoll = 20 * time.Millisecond

// closeOnExit closes conn, the socket to daemon, once daemon was killed, until stop is called. Its socket alone
// would tell too late, or never: a daemon killed while one of its threads writes a notification that waits on a
// folder's lock (FUSE_NOTIFY_INVAL_ENTRY while a rename in it waits for the answer the daemon will not give)
// keeps its descriptors until that thread returns, which takes the next daemon answering the rename. The thread
// group leader is a zombie at once: that is the sign.
func closeOnExit(daemon int, conn net.Conn) (stop func()) {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(exitPoll)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if exited(daemon) {
					conn.Close()
					return
				}
			}
		}
	}()
	return func() { close(done) }
}

// exited says whether process pid's main thread is gone (a zombie, or no such process).
func exited(pid int) bool {
	f := procStat(fmt.Sprintf("/proc/%d", pid))
	return len(f) == 0 || f[0] == "Z" || f[0] == "X"
}

// mounted says whether the helper's mount is still in the mount table, as the connection it holds.
func (s *helperService) mounted() bool {
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(s.mnt))
	if err != nil || len(mounts) == 0 || mounts[len(mounts)-1].FSType != FSType {
		return false
	}
	minor, err := s.connection()
	return err == nil && uint32(mounts[len(mounts)-1].Minor) == minor
}

// start starts a daemon that takes the connection over, with a socket to this helper, and returns its pid. It
// answers the resent requests fatal EIO (resend_guard.go).
func (h *holder) start(fatal map[uint64]uint32) (net.Conn, int, error) {
	cfg, err := json.Marshal(takeoverConfig{Store: h.cfg.Store, Mountpoint: h.cfg.Mountpoint, Options: *h.cfg.Takeover, Init: *h.init, Fatal: fatal})
	if err != nil {
		return nil, 0, err
	}
	// This process's own binary, even when its path holds another build by now (an upgrade installed since): the
	// state it hands over is in its format.
	const exe = "/proc/self/exe"
	daemon := exec.Command(exe, TakeoverArg, h.cfg.Mountpoint)
	daemon.Args[0] = os.Args[0] // its name in ps: the binary's, not /proc/self/exe
	daemon.Env = append(os.Environ(), takeoverEnv+"="+string(cfg))
	daemon.Stdout, daemon.Stderr = os.Stderr, os.Stderr
	locks, theirs, err := newLockSocketPair()
	if err != nil {
		return nil, 0, err
	}
	theirsFile := os.NewFile(uintptr(theirs), "sessionfs-locks")
	defer theirsFile.Close()
	conn, pid, err := startLinked(daemon, (*exec.Cmd).Start, h.dev, h.nodes, theirsFile) // 3, 4, 5, 6 there too
	if err != nil {
		unix.Close(locks.fd)
		return nil, 0, err
	}
	h.locks.handTo(locks.fd)
	return conn, pid, nil
}

// RunTakeover is a daemon taking a mount's connection over, when argv[1] is TakeoverArg: it serves until the
// mount ends, and exits; otherwise it returns at once.
func RunTakeover() {
	if len(os.Args) < 2 || os.Args[1] != TakeoverArg {
		return
	}
	if err := serveTakenOver(); err != nil {
		fmt.Fprintf(os.Stderr, "sessionfs: the daemon taking the mount over: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// resumed is what a taking-over daemon serves: the connection, the INIT it was made with, and go-fuse's node
// file system, whose node ids it restores.
type resumed struct {
	dev      int
	init     fuse.InitIn
	nodeFS   fuse.RawFileSystem
	restored int               // nodes the kernel holds restored before it served
	later    int               // and left to restore when the kernel first names them (go-fuse's takeover_pending.go)
	reopen   *reopened         // a normal user's: the old daemons' file handles opened again (handover_handles.go)
	fatal    map[uint64]uint32 // resent requests a daemon died serving: answered EIO (resend_guard.go)
}

func serveTakenOver() error {
	var cfg takeoverConfig
	if err := json.Unmarshal([]byte(os.Getenv(takeoverEnv)), &cfg); err != nil {
		return fmt.Errorf("read the configuration: %w (this process is started by the mount's helper)", err)
	}
	os.Unsetenv(takeoverEnv)
	takeoverFault()
	// The helper stops the mount on the daemon's word only: an interrupt is this process's to act on.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	store, err := layout.OpenStore(cfg.Store)
	if err != nil {
		return err
	}
	f := os.NewFile(helperFD, "helper")
	if f == nil {
		return errors.New("descriptor 3 is not open (this process is started by the mount's helper)")
	}
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return err
	}
	unix.CloseOnExec(holderDev)
	nodes, err := nodelog.Map(holderNodes)
	if err != nil {
		return err
	}
	root := os.Geteuid() == 0                                                                        // a normal user's daemon is not confined (holder_user.go)
	taken := &takenOver{heldDaemon: heldDaemon{user: !root, nodes: nodes, locks: takenLockSocket()}, // lockowners.go
		resumed: resumed{dev: holderDev, init: cfg.Init, fatal: cfg.Fatal}}
	s := &startup{store: store, mountpoint: cfg.Mountpoint, opts: cfg.Options, given: cfg.Options, confined: root,
		keep: taken, helper: rpc.NewClient(conn), helperPID: os.Getppid()}
	m, err := s.start(nil)
	if err != nil {
		return err
	}
	go unmountOnSignal(m, sigs) // the holder logs the takeover (Served)
	return m.Wait()
}

// unmountOnSignal unmounts on the first signal, and detaches a busy mount.
func unmountOnSignal(m *Mount, sigs <-chan os.Signal) {
	<-sigs
	if m.Unmount() != nil {
		_ = m.Detach()
	}
}

// takenOver is a daemon taking a held connection over (keep.go's keeper): it mounts nothing and starts no helper
// (it was given the connection, the node log and its socket to the holder), and serves the connection once the
// kernel's node ids are restored and the requests the daemon before had read are resent.
type takenOver struct {
	heldDaemon
	resumed
}

func (*takenOver) makesMount() bool                  { return false }
func (*takenOver) hasHelper(bool) bool               { return false } // the holder that started it
func (*takenOver) openDevice(*startup) (bool, error) { return true, nil }
func (*takenOver) helperHolds(*startup, *helperConfig) ([]int, func(), error) {
	return nil, func() {}, nil
}
func (*takenOver) initialized(*startup) *rpc.Call { return nil } // the holder has the INIT: it gave it

// wrap opens the old daemon's files again (handover_handles.go: a root mount's for lock requests only, the
// kernel reads and writes them itself), adopts the lock owners (before the confinement: the kernel says what each
// holds in /proc), and makes go-fuse's server of the connection from the INIT the first daemon read.
func (t *takenOver) wrap(s *startup, nodeFS, raw fuse.RawFileSystem) (fuse.RawFileSystem, error) {
	t.gateRequests(s)
	t.reopen = newReopened(raw)
	t.reopen.tree = s.tree
	raw = t.reopen
	if !t.user {
		raw = lockReopened{t.reopen}
	}
	t.adoptLocks(s.tree) // lockowners.go
	raw = resendIdempotent{raw}
	s.fuse.MountOptions.ResendGuard = resendGuard{helper: s.helper, fatal: t.fatal}
	server, err := fuse.ResumeServer(raw, t.dev, "", &s.fuse.MountOptions, t.init)
	if err != nil {
		return nil, fmt.Errorf("take the connection over: %w", err)
	}
	s.server, t.nodeFS = server, nodeFS
	return raw, nil
}

// serve, confined by now (a root mount's), restores the node ids the kernel holds, asks the kernel to resend what
// the dead daemon had read, and serves.
func (t *takenOver) serve(s *startup) (bool, error) {
	recorded, handles, err := t.nodes.Read()
	if t.reopen != nil {
		t.reopen.setBelow(handles)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sessionfs: %v: the files the kernel holds from the daemon before get errors\n", err)
	}
	t.restored, t.later = gofs.RestoreNodes(t.nodeFS, recorded, handles)
	gofs.RestorePassthrough(t.nodeFS, t.nodes.PassthroughHandles())
	gofs.RecordNodes(t.nodeFS, t.nodes)
	if st := s.server.NotifyResend(); !st.Ok() {
		fmt.Fprintf(os.Stderr, "sessionfs: the kernel resends nothing (%v; Linux 6.9 does): the requests the daemon before had read wait for good\n", st)
	}
	go s.server.Serve()
	s.helper.Go("Helper.Served", ServedArgs{Restored: t.restored, Later: t.later}, nil, make(chan *rpc.Call, 1))
	return true, nil
}
