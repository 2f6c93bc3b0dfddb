package takeover

import (
	"fmt"
	"net"
	"net/rpc"
	"sync"
	"time"

	"github.com/sessionfs/sessionfs/mount/inspect"
)

// serveUntilGone serves a daemon's calls on conn until its socket ends (the daemon exited, or closeOnExit saw it
// killed), not until the calls still running end: net/rpc waits for those, and one may wait on the mount itself
// (the POLL probe, a walk through the mount), which only the next daemon answers. Such a call ends once it
// does; its answer goes nowhere.
func serveUntilGone(srv *rpc.Server, conn net.Conn) {
	c := &endingConn{Conn: conn, ended: make(chan struct{})}
	go srv.ServeConn(c)
	<-c.ended
}

// endingConn says when its first read fails: the socket ended.
type endingConn struct {
	net.Conn
	ended chan struct{}
	once  sync.Once
}

func (c *endingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		c.once.Do(func() { close(c.ended) })
	}
	return n, err
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
	f := inspect.ProcStat(fmt.Sprintf("/proc/%d", pid))
	return len(f) == 0 || f[0] == "Z" || f[0] == "X"
}
