package takeover

import (
	"fmt"
	"net"
	"net/rpc"
	"os"
	"sync"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Holder is a held mount's hold on its FUSE connection (takeover.go): the connection, the node log and the lock
// owners' descriptors, the kernel's INIT, the daemons it started and the hand-overs asked of it. The privileged
// helper hosts it (serveDaemon) beside its own service: the daemon calls it as "Holder", and it asks of the helper
// only what Host offers.
type Holder struct {
	cfg        Config
	host       Host
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

	// hand guards the hand-overs: daemon, the serving daemon's pid; upgrade and upgradeReply, a hand-over to a
	// new binary and its asker (upgrade.go, holder_exec.go); upgradedAt, when the last hand-over's daemon began to
	// serve (handoverSpacing); the control socket; resending and fatal, the resent requests the daemon serves now
	// and those a daemon died serving (resend_guard.go). Taken after mu, never before it.
	hand         sync.Mutex
	daemon       int
	upgrade      *pendingUpgrade
	upgradeReply *os.File
	upgradedAt   time.Time
	controlOn    bool
	stopControl  func()
	resending    map[uint64]uint32
	fatal        map[uint64]uint32
}

// Host is what a Holder asks of the helper that hosts it.
type Host interface {
	Connection() (uint32, error) // the mount's FUSE connection, from the mount table
	Abort() error                // the connection ended (fusectl)
	Ending() bool                // the daemon asked for the mount to end: no daemon takes over
	// ReleaseBinds detaches the helper's binds, which go with this process (an exec, a move); stopped: the binds'
	// worker waits on no request of the mount.
	ReleaseBinds() (stopped bool)
}

// NewHolder takes the connection, the node log and the lock owners' socket the first daemon passed (DevFD,
// NodesFD, LocksFD), or a holder before it handed over (upgraded).
//
// upgraded: this process is a holder re-executed as a new binary, which serves no daemon yet.
func NewHolder(cfg Config, host Host) (h *Holder, upgraded bool, err error) {
	unix.CloseOnExec(DevFD) // passed to a taking-over daemon explicitly, never to anything else
	unix.CloseOnExec(NodesFD)
	h = &Holder{cfg: cfg, host: host, dev: os.NewFile(DevFD, "/dev/fuse"), nodes: os.NewFile(NodesFD, "sessionfs-nodes"), locks: newHeldLocks()}
	if _, upgraded := os.LookupEnv(upgradeEnv); !upgraded && IsSocket(LocksFD) { // the first daemon's (lockowners.go)
		unix.CloseOnExec(LocksFD)
		h.locks.attach(LocksFD)
	}
	upgraded, err = h.upgraded() // holder_exec.go
	return h, upgraded, err
}

// HandedOver says whether this process is a helper re-executed as a new binary by a holder (NewHolder takes what
// it was handed).
func HandedOver() bool {
	_, ok := os.LookupEnv(upgradeEnv)
	return ok
}

// Serve serves daemons, the one on conn first (nil: a holder re-executed as a new binary starts its own), each
// until it is gone, and starts the next that takes the connection over, until the mount ends.
func (h *Holder) Serve(srv *rpc.Server, conn net.Conn, daemon int, upgraded bool) error {
	defer h.closeControl()
	var err error
	if upgraded {
		h.listenControlOnce()
		if conn, daemon, err = h.takeOver(); err != nil || conn == nil {
			h.upgradeFailed(fmt.Errorf("no daemon of the new binary serves: %v", err))
			return err
		}
	}
	for conn != nil {
		h.setDaemon(daemon)
		stop := closeOnExit(daemon, conn)
		serveUntilGone(srv, conn) // a call waiting on the mount waits for the next daemon (holder_serve.go)
		stop()
		if conn, daemon, err = h.takeOver(); err != nil {
			return err
		}
	}
	return nil
}
