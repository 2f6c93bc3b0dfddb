package takeover

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// What a daemon tells its holder (over net/rpc, as "Holder") of its serving: Initialized, the first one; Resumed
// and Served, one that took over (the resent requests it serves it tells in resend.go: Resending, Resent). Each
// call is the serving daemon's, which is confined: the holder takes the INIT and numbers from it, nothing from a
// session.

// Initialized keeps the kernel's INIT as the first daemon read it, for a daemon that takes over.
func (h *Holder) Initialized(init fuse.InitIn, _ *struct{}) error {
	defer h.saveHeld() // once unlocked: the mount is held
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.init == nil { // the first daemon's: a later one is told it, never tells it
		h.init, h.serving = &init, true
	}
	h.listenControlOnce() // the mount is there: a new binary may ask for it (upgrade.go), once the daemon says it serves
	return nil
}

// Resumed: the daemon that took the connection over serves.
func (h *Holder) Resumed(_ struct{}, _ *struct{}) error {
	h.mu.Lock()
	h.serving, h.failures = true, 0
	h.mu.Unlock()
	h.upgradeServed() // an upgrade's asker is told (holder_exec.go)
	return nil
}

// ServedArgs are what a daemon that took the connection over tells its holder once it serves: how many nodes
// the kernel holds it restored, and how many it left to restore when the kernel first names them.
type ServedArgs struct{ Restored, Later int }

// Served: the daemon that took the connection over serves (Resumed), having restored args.Restored nodes. The
// holder says so in the log, one line a takeover.
func (h *Holder) Served(args ServedArgs, _ *struct{}) error {
	if err := h.Resumed(struct{}{}, nil); err != nil {
		return err
	}
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
		st.Daemon, st.Takeovers, h.cfg.Mountpoint, how, st.Took, st.Restored, later, st.Waiting)
	h.saveHeld()
	return nil
}

// upgradeServed tells the asker of an upgrade which daemon serves, once it does (Resumed).
func (h *Holder) upgradeServed() {
	h.hand.Lock()
	f, daemon := h.upgradeReply, h.daemon
	h.upgradeReply = nil
	if f != nil {
		h.upgradedAt = time.Now()
	}
	h.hand.Unlock()
	if f == nil {
		return
	}
	fmt.Fprintf(os.Stderr, "sessionfs: %s is served by sessionfs %s (pid %d)\n", h.cfg.Mountpoint, Version, daemon)
	_ = json.NewEncoder(f).Encode(upgradeReply{Daemon: daemon, Version: Version})
	f.Close()
}
