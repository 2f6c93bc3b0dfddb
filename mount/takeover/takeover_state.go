package takeover

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/mount/inspect"
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

// held is the holder's state, as it hands it to the holder after it (an upgrade, a move).
func (h *Holder) held() Held {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state
}

// heldFile is the state file of the holder of connection minor.
func heldFile(minor uint32) string {
	return filepath.Join(controlDir(), fmt.Sprintf("held-%d.json", minor)) // beside the control sockets: root's, or the user's
}

// saveHeld writes the holder's state for doctor (replaced whole: a reader never sees half of it).
func (h *Holder) saveHeld() {
	minor, err := h.host.Connection()
	if err != nil {
		return
	}
	h.mu.Lock()
	st := h.state
	h.mu.Unlock()
	st.Holder = os.Getpid()
	st.HolderStart, _ = inspect.StartTicks(st.Holder)
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

// removeHeld removes the state file: the holder ends.
func (h *Holder) removeHeld() {
	if minor, err := h.host.Connection(); err == nil {
		_ = os.Remove(heldFile(minor))
	}
}

// ErrNotHeld: no process holds the mount's connection for a daemon to take it over.
var ErrNotHeld = errors.New("no helper holds its connection: a killed daemon leaves it stale")

// HeldBy tells whether the mount at mnt is held (a killed daemon replaced), by whom and how often it was. The state
// file is believed only when its holder holds the mount's connection now.
func HeldBy(mnt string) (Held, error) {
	minor, ok := inspect.Connection(mnt)
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
	if holds, _ := inspect.HoldsConnection(st.Holder, int64(inspect.KernelDev(0, minor))); !holds || !inspect.HoldsHelperCaps(st.Holder) && !inspect.IsUsersHolder(st.Holder) {
		return Held{}, ErrNotHeld // a holder that ended; its connection's number given to another mount since
	}
	st.Nodes, st.Compactions, _ = nodesHeld(st.Holder)
	return st, nil
}

// nodesHeld counts the nodes the kernel holds, from the node log holder keeps (its descriptor NodesFD, mapped
// read-only here: what a daemon taking over would restore, before it looks them up), and how often the log was
// compacted.
func nodesHeld(holder int) (nodes, compactions int, err error) {
	fd, err := unix.Open(fmt.Sprintf("%s/fd/%d", inspect.LiveThreadDir(holder), NodesFD), unix.O_RDONLY|unix.O_CLOEXEC, 0)
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

// SayHeld writes that holder holds the mount at mnt, before its first daemon serves (the start-up's sayHeld).
func SayHeld(mnt string, holder int) {
	if minor, ok := inspect.Connection(mnt); ok {
		start, _ := inspect.StartTicks(holder)
		writeHeld(minor, Held{Holder: holder, HolderStart: start})
	}
}
