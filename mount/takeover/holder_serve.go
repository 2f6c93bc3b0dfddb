package takeover

import (
	"fmt"
	"net"
	"net/rpc"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

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

// exitPoll is how often the helper looks whether its daemon was killed (closeOnExit) where the kernel cannot
// tell it (no pidfd), and leaderPoll where the kernel tells of the process's end but not of its leader's alone.
const (
	exitPoll   = 20 * time.Millisecond
	leaderPoll = time.Second
)

// closeOnExit closes conn, the socket to daemon, once daemon was killed, until stop is called. Its socket alone
// would tell too late, or never: a daemon killed while one of its threads writes a notification that waits on a
// folder's lock (FUSE_NOTIFY_INVAL_ENTRY while a rename in it waits for the answer the daemon will not give)
// keeps its descriptors until that thread returns, which takes the next daemon answering the rename. The thread
// group leader is a zombie at once: that is the sign, and only /proc shows it (a pidfd, even PIDFD_THREAD of the
// leader, turns readable once the last thread is gone). So the kernel tells of the usual end, through a pidfd,
// and /proc is read every leaderPoll for the rare one: polling /proc every exitPoll woke an idle helper some 600
// times a second (2% of a core).
func closeOnExit(daemon int, conn net.Conn) (stop func()) {
	done := make(chan struct{})
	var once sync.Once
	closeConn := func() { once.Do(func() { conn.Close() }) }
	poll, stopWait := exitPoll, func() {}
	if stopPidfd, ok := onProcessExit(daemon, closeConn); ok {
		poll, stopWait = leaderPoll, stopPidfd
	}
	go func() {
		tick := time.NewTicker(poll)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if exited(daemon) {
					closeConn()
					return
				}
			}
		}
	}()
	return func() { stopWait(); close(done) }
}

// onProcessExit calls f once process pid has ended, told by its pidfd, until stop is called; false where no
// pidfd can be had.
func onProcessExit(pid int, f func()) (stop func(), ok bool) {
	fd, err := unix.PidfdOpen(pid, unix.O_NONBLOCK)
	if err != nil {
		return nil, false
	}
	file := os.NewFile(uintptr(fd), "pidfd") // non-blocking: the runtime's poller waits on it, no thread does
	rc, err := file.SyscallConn()
	if err != nil {
		file.Close()
		return nil, false
	}
	go func() {
		// Read waits for the pidfd to turn readable each time the function says false; stop closes it, which
		// ends Read with an error.
		if rc.Read(readable) == nil {
			f()
		}
	}()
	return func() { file.Close() }, true
}

// readable says whether descriptor fd is readable now (a pidfd: its process has ended).
func readable(fd uintptr) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, 0)
	return err == nil && n > 0
}

// exited says whether process pid's main thread is gone (a zombie, or no such process).
func exited(pid int) bool {
	f := inspect.ProcStat(fmt.Sprintf("/proc/%d", pid))
	return len(f) == 0 || f[0] == "Z" || f[0] == "X"
}
