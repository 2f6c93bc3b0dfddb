package takeover

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/internal/selfexec"
)

// The holder's side of an upgrade (upgrade.go): it tells the serving daemon to hand over, and once the daemon is
// gone it executes the new binary in its own place, keeping what it holds.

// upgradeEnv carries, into a holder re-executed as a new binary, what the old one handed it (upgradedState).
const upgradeEnv = "SESSIONFS_UPGRADED"

// handoverGrace is how long a daemon told to hand over may take before it is killed (its requests are resent
// all the same).
const handoverGrace = 3 * time.Second

// handoverSpacing is how long the daemon of a hand-over serves before the next may begin: sessionfs mounts asked
// one after the other (a reload and a manual upgrade, a script's loop) wait for it, as for a hand-over under way,
// so that the mount's users get their work through between two. Back to back, five hand-overs made an agent's
// next request wait for all five (about a second here), where it waits for one now.
const handoverSpacing = 250 * time.Millisecond

// upgradedState is what a holder hands the new binary it becomes, besides the configuration and the connection
// and node log (DevFD, NodesFD).
type upgradedState struct {
	Init    fuse.InitIn
	Reply   int         // the asker's socket: told who serves once a daemon does
	Orphans []int       // daemons the holder before started, ending still: reaped by this one
	Locks   []heldOwner // the lock owners' descriptors it kept, open across the exec (lockowners.go)
	// LocksFile: the descriptor of a memory file of more of them, too many for the environment (holder_state_locks.go)
	LocksFile int `json:",omitempty"`
	// Held: the holder before's state, so that doctor counts the mount's takeovers since it began (none from a
	// build before it was carried).
	Held Held
}

// pendingUpgrade is an upgrade asked for: the new binary, and the asker's socket.
type pendingUpgrade struct {
	exe   int
	reply *os.File
	move  bool // to a holder in another pid namespace, not by exec (holder_move.go)
}

// beginUpgrade keeps the binary exe and the asker's socket c, and tells the serving daemon to hand over: the
// holder executes exe once the daemon is gone (execUpgrade).
func (h *Holder) beginUpgrade(exe int, c *net.UnixConn) error {
	var st unix.Stat_t
	if err := unix.Fstat(exe, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o111 == 0 {
		return errors.New("what was sent is not an executable file")
	}
	// An ELF binary, checked before anything stops: the binds go before the exec, and a failed exec leaves this
	// build serving without them.
	magic := make([]byte, 4)
	if n, err := unix.Pread(exe, magic, 0); err != nil || n != 4 || string(magic) != "\x7fELF" {
		return errors.New("what was sent is not a binary (ELF)")
	}
	return h.awaitHandover(&pendingUpgrade{exe: exe}, c)
}

// awaitHandover keeps the hand-over u with the asker's socket c, and tells the serving daemon to hand over: once
// it is gone, takeOver's execUpgrade carries u out.
func (h *Holder) awaitHandover(u *pendingUpgrade, c *net.UnixConn) error {
	reply, err := c.File()
	if err != nil {
		return err
	}
	h.mu.Lock()
	initialized := h.init != nil
	h.mu.Unlock()
	ending := h.host.Ending()
	h.hand.Lock()
	switch {
	case ending:
		err = errors.New("the mount is ending")
	case h.upgrade != nil || h.upgradeReply != nil: // begun, or its asker not told yet who serves
		err = errHandoverUnderWay
	case !initialized || h.daemon == 0 || time.Since(h.upgradedAt) < handoverSpacing:
		err = errNotServedYet
	}
	if err != nil {
		h.hand.Unlock()
		reply.Close()
		return err
	}
	u.reply = reply
	h.upgrade = u
	daemon := h.daemon
	h.hand.Unlock()
	c.Close()
	// Under systemd (NotifyAccess=all), the unit's main process is the holder from now on: the daemon's exit is
	// no service's end.
	_ = notifySystemd(fmt.Sprintf("MAINPID=%d\n", os.Getpid()))
	fmt.Fprintf(os.Stderr, "sessionfs: handing %s over to a new binary: the daemon (%d) stops\n", h.cfg.Mountpoint, daemon)
	if err := unix.Kill(daemon, HandoverSignal); err != nil {
		_ = unix.Kill(daemon, unix.SIGKILL)
	}
	go func() { // a daemon that does not go in time (a build before hand-overs) is killed: the kernel resends
		time.Sleep(handoverGrace)
		h.hand.Lock()
		still := h.daemon == daemon
		h.hand.Unlock()
		if still && !exited(daemon) {
			_ = unix.Kill(daemon, unix.SIGKILL)
		}
	}()
	return nil
}

// execUpgrade, once the daemon is gone, executes the binary an upgrade sent in this process's place. It returns
// only when there is no upgrade, or it failed (the asker is told why, and this binary serves on).
func (h *Holder) execUpgrade() {
	h.hand.Lock()
	u := h.upgrade
	h.hand.Unlock()
	if u == nil {
		return
	}
	if u.move {
		h.moveOut(u)
		return
	}
	defer unix.Close(u.exe)
	err := h.exec(u)
	h.endUpgrade()
	fmt.Fprintf(os.Stderr, "sessionfs: the hand-over of %s failed: %v; this build serves on\n", h.cfg.Mountpoint, err)
	_ = json.NewEncoder(u.reply).Encode(upgradeReply{Error: err.Error() + " (the mount is served by the build before)",
		Busy: errors.Is(err, errThreadOnMount)})
	u.reply.Close()
}

// endUpgrade ends the hand-over under way. Till then (the exec: the asker's socket of another hand-over begun
// meanwhile would not outlive it) another asker is told one is under way, and waits.
func (h *Holder) endUpgrade() {
	h.hand.Lock()
	h.upgrade = nil
	h.hand.Unlock()
}

// errThreadOnMount: a thread of the holder waits for the answer to a request of the mount that the daemon gone had
// read (the binds' worker looking up a place it binds over; the poll probe at start-up). The kernel waits such a
// request out, for a thread killed too, so an exec, which ends every other thread first, would wait for the daemon
// it starts after: for good, and every user of the mount with it (an upgrade asked as the mount began to serve,
// about once in 60). This build serves on instead: its next daemon answers the request again, and the asker asks
// again.
var errThreadOnMount = errors.New("a thread of the holder waits on the mount")

// threadWaitsOnFUSE says whether a thread of this process waits for a FUSE request's answer (its wchan).
func threadWaitsOnFUSE() bool {
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		w, err := os.ReadFile("/proc/self/task/" + t.Name() + "/wchan")
		if err == nil && (string(w) == "request_wait_answer" || strings.HasPrefix(string(w), "fuse_")) {
			return true
		}
	}
	return false
}

func (h *Holder) exec(u *pendingUpgrade) error {
	init, err := h.keptInit()
	if err != nil {
		return err
	}
	reapChildren()
	locks := h.locks.held()
	st := upgradedState{Init: *init, Reply: int(u.reply.Fd()), Orphans: children(), Held: h.held()}
	locksFile, err := st.carryLocks(locks)
	if err != nil {
		return err
	}
	if locksFile != nil {
		defer locksFile.Close()
	}
	state, err := json.Marshal(st)
	if err != nil {
		return err
	}
	cfg, err := json.Marshal(h.cfg)
	if err != nil {
		return err
	}
	env := []string{selfexec.HelperEnv + "=" + string(cfg), upgradeEnv + "=" + string(state)}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, selfexec.HelperEnv+"=") && !strings.HasPrefix(kv, upgradeEnv+"=") {
			env = append(env, kv)
		}
	}
	// The binds are this process's: they go with it, and the new holder makes them again as they are used.
	if !h.host.ReleaseBinds() {
		return fmt.Errorf("%w (the binds' worker)", errThreadOnMount)
	}
	if threadWaitsOnFUSE() {
		return errThreadOnMount
	}
	h.closeControl()
	kept := []int{DevFD, NodesFD, int(u.reply.Fd())}
	if locksFile != nil {
		kept = append(kept, st.LocksFile)
	}
	for _, o := range locks {
		kept = append(kept, o.FD)
	}
	for _, fd := range kept {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
			return err
		}
	}
	// The binary by its descriptor: the path it was run from may be another file by now.
	path := fmt.Sprintf("/proc/self/fd/%d", u.exe)
	name, err := os.Readlink(path) // its name in ps
	if err != nil {
		name = os.Args[0]
	}
	err = syscall.Exec(path, []string{name, selfexec.Helper, h.cfg.Mountpoint}, env)
	for _, fd := range kept {
		unix.CloseOnExec(fd)
	}
	h.listenControlOnce()
	return fmt.Errorf("run the new binary: %w", err)
}

// reapChildren reaps the daemons this holder started that ended: the binary it becomes knows nothing of them, and
// they would stay zombies for the mount's life (their reapers, exec.Cmd.Wait, go with this image).
func reapChildren() {
	for {
		var ws unix.WaitStatus
		if pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil); pid <= 0 || err != nil {
			return
		}
	}
}

// children are this process's children still there (a daemon killed may take a moment to end: its threads
// first).
func children() []int {
	var out []int
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		b, _ := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// reapOrphans reaps, as they end, the daemons the holder before started: each wait holds a thread, and wakes
// nothing until its daemon ends (one may serve its last users for long).
func reapOrphans(pids []int) {
	for _, pid := range pids {
		go func() {
			var ws unix.WaitStatus
			for {
				if _, err := unix.Wait4(pid, &ws, 0, nil); err != unix.EINTR {
					return
				}
			}
		}()
	}
}

// upgraded, in a holder re-executed as a new binary, takes what the old one handed it: false in any other helper.
func (h *Holder) upgraded() (bool, error) {
	raw, ok := os.LookupEnv(upgradeEnv)
	if !ok {
		return false, nil
	}
	os.Unsetenv(upgradeEnv)
	var st upgradedState
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return false, fmt.Errorf("read what the holder before handed over: %w", err)
	}
	unix.CloseOnExec(st.Reply)
	reapOrphans(st.Orphans)
	locks, err := st.lockOwners()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sessionfs: %v: the POSIX locks held through the mount may be lost\n", err)
	}
	h.locks.restore(locks)
	h.mu.Lock()
	h.init, h.serving, h.state, h.upgrading = &st.Init, true, st.Held, true
	h.mu.Unlock()
	h.upgradeReply = os.NewFile(uintptr(st.Reply), "sessionfs-upgrade")
	return true, nil
}

// upgradeFailed tells the asker of an upgrade that no daemon of the new binary serves.
func (h *Holder) upgradeFailed(err error) {
	h.hand.Lock()
	f := h.upgradeReply
	h.upgradeReply = nil
	h.hand.Unlock()
	if f != nil {
		_ = json.NewEncoder(f).Encode(upgradeReply{Error: err.Error()})
		f.Close()
	}
}

// setDaemon notes the daemon the helper serves now.
func (h *Holder) setDaemon(pid int) {
	h.hand.Lock()
	h.daemon = pid
	h.hand.Unlock()
}

// listenControlOnce opens the control socket once the mount is there (a holder's only).
func (h *Holder) listenControlOnce() {
	h.hand.Lock()
	on := h.controlOn
	h.controlOn = true
	h.hand.Unlock()
	if on {
		return
	}
	stop, err := h.listenControl()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sessionfs: %v: sessionfs mount cannot hand this mount over to a new binary\n", err)
		return
	}
	h.hand.Lock()
	h.stopControl = stop
	h.hand.Unlock()
}

// closeControl removes the control socket.
func (h *Holder) closeControl() {
	h.hand.Lock()
	stop := h.stopControl
	h.stopControl, h.controlOn = nil, false
	h.hand.Unlock()
	if stop != nil {
		stop()
	}
}

// notifySystemd sends msg to systemd's notify socket, under systemd.
func notifySystemd(msg string) error {
	sock := os.Getenv("NOTIFY_SOCKET")
	if sock == "" {
		return nil
	}
	if sock[0] == '@' {
		sock = "\x00" + sock[1:]
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.Write([]byte(msg))
	return err
}
