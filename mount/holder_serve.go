package mount

import (
	"net"
	"net/rpc"
	"sync"
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
