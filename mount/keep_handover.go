package mount

import (
	"fmt"
	"net/rpc"
	"os"
	"os/signal"
	"time"

	"github.com/sessionfs/sessionfs/mount/takeover"
)

// handoverDrain bounds the wait for the requests in flight at a hand-over (their answers written).
const handoverDrain = 500 * time.Millisecond

// initTimeout bounds the wait for the holder to keep the INIT.
const initTimeout = 10 * time.Second

// awaitInit waits for the holder to have the INIT (call, the daemon's Holder.Initialized; nil: no holder): until
// it does, a daemon killed ends the mount, as the holder has nothing to start the next one with. The helper
// starts while the daemon confines itself, so this is mostly done by then.
func awaitInit(call *rpc.Call) {
	if call == nil {
		return
	}
	t := time.NewTimer(initTimeout)
	defer t.Stop()
	select {
	case <-call.Done:
	case <-t.C:
		fmt.Fprintf(os.Stderr, "sessionfs: the helper did not take the mount's INIT in %s: a daemon killed now ends the mount\n", initTimeout)
	}
}

// catchHandover, before the holder may ask for a hand-over (its control socket opens once it has the INIT, and a
// daemon taking over is asked once it said it serves), keeps takeover.HandoverSignal for awaitHandover: one that came during
// the start-up was ignored (the Go runtime's default), and the hand-over waited for the holder to kill the daemon
// (an upgrade asked as the mount began to serve: "did not answer: i/o timeout").
func (h *heldDaemon) catchHandover() {
	if h.handover != nil {
		return
	}
	h.handover = make(chan os.Signal, 1)
	signal.Notify(h.handover, takeover.HandoverSignal)
}

// awaitHandover makes a daemon whose connection a holder keeps hand over on takeover.HandoverSignal, once it serves: it
// exits, and the kernel resends what it had read and not answered to the daemon that takes over (a daemon killed
// is no different, and its users wait the same).
func (h *heldDaemon) awaitHandover(s *startup) {
	h.catchHandover()
	go func() {
		<-h.handover
		fmt.Fprintf(os.Stderr, "sessionfs: handing %s over to a new binary\n", s.mnt)
		if !h.gate.Close(handoverDrain) {
			fmt.Fprintf(os.Stderr, "sessionfs: requests still in flight after %s: the daemon that takes over gets them again\n", handoverDrain)
		}
		if s.scratch != nil {
			s.scratch()
		}
		os.Exit(0)
	}()
}
