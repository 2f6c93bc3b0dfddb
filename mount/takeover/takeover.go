package takeover

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/moby/sys/mountinfo"

	"github.com/sessionfs/sessionfs/internal/selfexec"
	"github.com/sessionfs/sessionfs/mount/inspect"
)

// The holder's descriptors (the helper's: after its socket, 3) and a taking-over daemon's (after its own).
const (
	DevFD   = 4
	NodesFD = 5
)

// maxFailedTakeovers is how many daemons in a row may die before they serve.
const maxFailedTakeovers = 3

// DaemonConfig is what a taking-over daemon is told.
type DaemonConfig struct {
	Store, Mountpoint string
	Options           json.RawMessage // package mount's Options
	Init              fuse.InitIn
	Fatal             map[uint64]uint32 `json:",omitempty"` // resent requests a daemon died serving (resend_guard.go)
}

// takeOver runs once the serving daemon is gone: it starts a daemon that takes the connection over and returns
// the socket to it and its pid, or nil when the mount ends (or is not held).
func (h *Holder) takeOver() (net.Conn, int, error) {
	if h.host.Ending() || !h.mounted() {
		h.removeHeld()
		return nil, 0, nil // the mount ended: the connection goes with this process
	}
	h.execUpgrade() // a hand-over asked for (upgrade.go): this process becomes the new binary, unless that fails
	fatal := h.noteFatal()
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
			h.replacing(pid)
			return conn, pid, nil
		}
		why = err
	}
	// Never a hang: the users get errors, and the next mount clears the mount as a stale one.
	h.removeHeld()
	if err := h.host.Abort(); err != nil {
		return nil, 0, fmt.Errorf("%v, and the connection could not be ended: %v", why, err)
	}
	return nil, 0, fmt.Errorf("%v: the mount's connection is ended (sessionfs mount clears it)", why)
}

// keptInit is the kernel's INIT the holder keeps, which a binary it hands the connection to resumes from.
func (h *Holder) keptInit() (*fuse.InitIn, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.init == nil {
		return nil, errors.New("no INIT was kept")
	}
	return h.init, nil
}

// cannotTakeOver says why no daemon may take the connection over (h.mu held), or nil: then one is started.
func (h *Holder) cannotTakeOver() error {
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

// mounted says whether the helper's mount is still in the mount table, as the connection it holds.
func (h *Holder) mounted() bool {
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(h.cfg.Mountpoint))
	if err != nil || len(mounts) == 0 || mounts[len(mounts)-1].FSType != inspect.FSType {
		return false
	}
	minor, err := h.host.Connection()
	return err == nil && uint32(mounts[len(mounts)-1].Minor) == minor
}

// start starts a daemon that takes the connection over, with a socket to this helper, and returns its pid. It
// answers the resent requests fatal EIO (resend_guard.go).
func (h *Holder) start(fatal map[uint64]uint32) (net.Conn, int, error) {
	cfg, err := json.Marshal(DaemonConfig{Store: h.cfg.Store, Mountpoint: h.cfg.Mountpoint, Options: h.cfg.Takeover, Init: *h.init, Fatal: fatal})
	if err != nil {
		return nil, 0, err
	}
	// This process's own binary, even when its path holds another build by now (an upgrade installed since): the
	// state it hands over is in its format.
	const exe = "/proc/self/exe"
	daemon := exec.Command(exe, selfexec.Takeover, h.cfg.Mountpoint)
	daemon.Args[0] = os.Args[0] // its name in ps: the binary's, not /proc/self/exe
	daemon.Env = append(os.Environ(), selfexec.TakeoverEnv+"="+string(cfg))
	daemon.Stdout, daemon.Stderr = os.Stderr, os.Stderr
	locks, err := h.locks.handToNext() // the lock owners kept, waiting for it in its socket
	if err != nil {
		return nil, 0, err
	}
	defer locks.Close()
	return selfexec.StartLinked(daemon, (*exec.Cmd).Start, h.dev, h.nodes, locks) // 3, 4, 5, 6 there too
}

// maxFatal bounds the requests the holder remembers as fatal (the oldest are forgotten: each was answered EIO by
// then, or its caller is gone).
const maxFatal = 256

// noteFatal, once the daemon died (not handed over), keeps the resent requests it had not answered as fatal, for
// the daemon after it (DaemonConfig.Fatal), and says so in the log.
func (h *Holder) noteFatal() map[uint64]uint32 {
	h.hand.Lock()
	defer h.hand.Unlock()
	for unique, op := range h.resending {
		fmt.Fprintf(os.Stderr, "sessionfs: daemon %d died serving request %d (%s), which the daemon before it had read when it died too: the next daemon answers it EIO, not serving it again\n",
			h.daemon, unique, fuse.OpcodeName(op))
		if len(h.fatal) >= maxFatal {
			clear(h.fatal)
		}
		if h.fatal == nil {
			h.fatal = map[uint64]uint32{}
		}
		h.fatal[unique] = op
	}
	clear(h.resending)
	return h.fatal
}

// replacing notes that daemon was started to take over from one that died (h.mu held), and bounds how long it
// may take to serve.
func (h *Holder) replacing(daemon int) {
	h.replaced, h.state.Daemon, h.state.Waiting = time.Now(), daemon, h.waitingRequests()
	h.attempt++
	attempt := h.attempt
	time.AfterFunc(TakeoverBound, func() {
		h.mu.Lock()
		late := !h.serving && h.attempt == attempt
		h.mu.Unlock()
		if !late {
			return
		}
		fmt.Fprintf(os.Stderr, "sessionfs: daemon %d did not serve %s within %s of the daemon before dying: the connection is ended, so its users get errors (sessionfs mount serves it again)\n",
			daemon, h.cfg.Mountpoint, TakeoverBound)
		_ = h.host.Abort()
		_ = syscall.Kill(daemon, syscall.SIGKILL)
	})
}

// waitingRequests is how many requests the kernel has for the connection, unanswered (fusectl's waiting: the
// ones queued and the ones the dead daemon had read, which it resends).
func (h *Holder) waitingRequests() int {
	minor, err := h.host.Connection()
	if err != nil {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/sys/fs/fuse/connections/%d/waiting", minor))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}
