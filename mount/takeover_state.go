package mount

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/mount/takeover/nodelog"
)

// What a holder (takeover.go) tells of its takeovers: a line in the log for each, and a state file doctor reads;
// and the bound it puts on each: a daemon that does not serve within TakeoverBound is killed and the connection
// ended, so the mount's users get errors instead of waiting for good.

// TakeoverBound is how long the mount's users may wait for a daemon to take the connection over.
const TakeoverBound = 10 * time.Second

// Held is a holder's state, as doctor shows it.
type Held struct {
	Holder    int       // the helper that holds the connection
	Daemon    int       // the daemon it started last (0: the first daemon serves)
	Takeovers int       // daemons that took the connection over so far, since the mount began
	Upgrades  int       // of them, those that took it over in an upgrade (a new build's, a CSI plugin's next pod)
	Last      time.Time // when the last one served
	Took      time.Duration
	Restored  int // nodes the kernel holds that the last one restored before it served
	Later     int // and left to restore when the kernel first names them
	Waiting   int // requests the kernel had waiting when the last daemon before it died
	Nodes     int `json:"-"` // nodes the kernel holds now, as the node log says (HeldBy)
	// Compactions is how often the mount's daemons compacted the node log (HeldBy).
	Compactions int `json:"-"`
	// HolderStart is when the holder started (clock ticks after boot, startTicks): a process that took its pid
	// since is not it. 0 in a file of a build before.
	HolderStart uint64 `json:",omitempty"`
}

// ServedArgs are what a daemon that took the connection over tells its holder once it serves: how many nodes
// the kernel holds it restored, and how many it left to restore when the kernel first names them.
type ServedArgs struct{ Restored, Later int }

// Served: the daemon that took the connection over serves (Resumed), having restored args.Restored nodes. The
// holder says so in the log, one line a takeover.
func (s *helperService) Served(args ServedArgs, _ *struct{}) error {
	if err := s.Resumed(struct{}{}, nil); err != nil {
		return err
	}
	h := s.holder
	h.mu.Lock()
	h.state.Takeovers++
	how := ""
	if h.upgrading {
		h.state.Upgrades++
		h.upgrading, how = false, ", an upgrade"
	}
	h.state.Last = time.Now()
	h.state.Took = h.state.Last.Sub(h.replaced).Round(time.Millisecond)
	h.state.Restored, h.state.Later = args.Restored, args.Later
	st := h.state
	h.mu.Unlock()
	later := ""
	if st.Later > 0 {
		later = fmt.Sprintf(" (%d more when used)", st.Later)
	}
	fmt.Fprintf(os.Stderr, "sessionfs: daemon %d took the connection over (takeover %d of %s%s): it served %s after the daemon before ended, %d nodes the kernel holds restored%s, %d requests the kernel had waiting resent\n",
		st.Daemon, st.Takeovers, s.mnt, how, st.Took, st.Restored, later, st.Waiting)
	s.saveHeld()
	return nil
}

// held is the holder's state, as it hands it to the holder after it (an upgrade, a move).
func (h *holder) held() Held {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state
}

// replacing notes that daemon was started to take over from one that died (h.mu held), and bounds how long it
// may take to serve.
func (s *helperService) replacing(daemon int) {
	h := s.holder
	h.replaced, h.state.Daemon, h.state.Waiting = time.Now(), daemon, s.waitingRequests()
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
			daemon, s.mnt, TakeoverBound)
		_ = s.Abort(struct{}{}, nil)
		_ = syscall.Kill(daemon, syscall.SIGKILL)
	})
}

// waitingRequests is how many requests the kernel has for the connection, unanswered (fusectl's waiting: the
// ones queued and the ones the dead daemon had read, which it resends).
func (s *helperService) waitingRequests() int {
	minor, err := s.connection()
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

// heldFile is the state file of the holder of connection minor.
func heldFile(minor uint32) string {
	return filepath.Join(controlDir(), fmt.Sprintf("held-%d.json", minor)) // beside the control sockets: root's, or the user's
}

// saveHeld writes the holder's state for doctor (replaced whole: a reader never sees half of it).
func (s *helperService) saveHeld() {
	minor, err := s.connection()
	if err != nil {
		return
	}
	h := s.holder
	h.mu.Lock()
	st := h.state
	h.mu.Unlock()
	st.Holder = os.Getpid()
	st.HolderStart, _ = startTicks(st.Holder)
	writeHeld(minor, st)
}

// writeHeld replaces the state file of connection minor's holder with st, whole: a reader never sees half of it,
// nor two writers' halves (each writes a file of its own and renames it).
func writeHeld(minor uint32, st Held) {
	b, err := json.Marshal(st)
	// 0700, as the control sockets beside it want (ownDir): made 0755 here first (a fresh /run, each boot), it
	// left the holder without its control socket, and sessionfs mount said "already mounted" instead of upgrading.
	if err != nil || ownDir(controlDir()) != nil {
		return
	}
	f, err := os.CreateTemp(controlDir(), filepath.Base(heldFile(minor))+".*")
	if err != nil {
		return
	}
	_, err = f.Write(b)
	if err = errors.Join(err, f.Chmod(0o644), f.Close()); err == nil {
		err = os.Rename(f.Name(), heldFile(minor))
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
}

// sayHeld writes, before the mount serves its first request, that its helper holds it: a sessionfs mount that
// comes before the helper has told its state and listens (Initialized) then waits for it (held, Upgrade), where it
// found the mount unheld and refused it as mounted already, within the first milliseconds of every mount (a
// script that upgrades once the mount serves). Not asked of the helper, which is still starting: the mount would
// wait for it.
func (s *startup) sayHeld() {
	if minor, ok := connectionOf(s.mnt); ok && s.helperPID > 0 {
		start, _ := startTicks(s.helperPID)
		writeHeld(minor, Held{Holder: s.helperPID, HolderStart: start})
	}
}

// removeHeld removes the state file: the holder ends.
func (s *helperService) removeHeld() {
	if minor, err := s.connection(); err == nil {
		_ = os.Remove(heldFile(minor))
	}
}

// ErrNotHeld: no process holds the mount's connection for a daemon to take it over.
var ErrNotHeld = errors.New("no helper holds its connection: a killed daemon leaves it stale")

// HeldBy tells whether the mount at mnt is held (a killed daemon replaced), by whom and how often it was. The state
// file is believed only when its holder holds the mount's connection now.
func HeldBy(mnt string) (Held, error) {
	minor, ok := connectionMinor(mnt)
	if !ok {
		return Held{}, fmt.Errorf("%s is not a sessionfs mount", mnt)
	}
	var st Held
	b, err := os.ReadFile(heldFile(minor))
	if errors.Is(err, os.ErrPermission) {
		return Held{}, fmt.Errorf("%s is readable by root only: run as root", heldFile(minor))
	}
	if err != nil || json.Unmarshal(b, &st) != nil || st.Holder <= 0 || !st.holderIsThere() {
		return Held{}, ErrNotHeld
	}
	if holds, _ := holdsConnection(st.Holder, int64(kernelDev(0, minor))); !holds || !holdsHelperCaps(st.Holder) && !isUsersHolder(st.Holder) {
		return Held{}, ErrNotHeld // a holder that ended; its connection's number given to another mount since
	}
	st.Nodes, st.Compactions, _ = nodesHeld(st.Holder)
	return st, nil
}

// nodesHeld counts the nodes the kernel holds, from the node log holder keeps (its descriptor holderNodes, mapped
// read-only here: what a daemon taking over would restore, before it looks them up), and how often the log was
// compacted.
func nodesHeld(holder int) (nodes, compactions int, err error) {
	fd, err := unix.Open(fmt.Sprintf("%s/fd/%d", liveThreadDir(holder), holderNodes), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0, err
	}
	defer unix.Close(fd)
	l, err := nodelog.MapReadOnly(fd)
	if err != nil {
		return 0, 0, err
	}
	defer l.Unmap()
	recorded, _, err := l.Read()
	return len(recorded), int(l.Compactions()), err
}

// connectionMinor is the FUSE connection of the sessionfs mount at mnt, from the mount table.
func connectionMinor(mnt string) (uint32, bool) {
	info, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(mnt))
	if err != nil || len(info) == 0 || info[len(info)-1].FSType != FSType {
		return 0, false
	}
	return uint32(info[len(info)-1].Minor), true
}
