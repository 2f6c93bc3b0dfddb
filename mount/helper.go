package mount

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
)

// A confined mount is two processes. The daemon mounts, then confines itself (package confine) before it reads
// its first FUSE request, and serves every request from then on: a few capabilities, Landlock to the store, a
// seccomp allow-list without mount, unshare or execve. So a slip in the code that answers the mount's requests
// meets the kernel, not the host. What needs more (binding sessions' folders, unmounting, aborting a hung
// connection) is asked of a small helper it starts before confining itself: the helper (root, holding what the
// bounding set left it: confine.Keep and confine.HelperKeep) serves no FUSE request, does nothing else, and takes
// only session ids and folder names (helper_service.go). This file starts it and runs it.

// HelperArg is argv[1] of the privileged helper: main hands it to RunHelper.
const HelperArg = "__privileged"

// helperEnv carries the helper's configuration (helperConfig, JSON).
const helperEnv = "SESSIONFS_HELPER"

// DaemonLog, when set, is where the helper writes, and the daemons a holder starts: the daemon's log file, when the
// daemon's own output is a pipe that ends with it (mount --daemon's time-stamping).
var DaemonLog *os.File

// helperFD is the helper's end of its socket to the daemon.
const helperFD = 3

// helperConfig is what the helper is told.
type helperConfig struct {
	Store, Mountpoint string
	MaxBinds          int
	ReadOnly          bool
	// Takeover, when set, is the mount's options: the helper holds the connection (holderDev) and the node log
	// (holderNodes), and starts a daemon with them when the serving one dies (takeover.go).
	Takeover *Options
}

// startHelper starts the privileged helper with its end of a socket pair and returns a client of it and its pid.
// The helper ends when the socket closes (this process ends), unless it holds the connection (keep: the
// /dev/fuse descriptor and the node log, its descriptors 4 and 5).
func startHelper(cfg helperConfig, keep ...int) (*rpc.Client, int, error) {
	env, err := json.Marshal(cfg)
	if err != nil {
		return nil, 0, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, 0, err
	}
	helper := exec.Command(exe, HelperArg, cfg.Mountpoint)
	helper.Env = append(os.Environ(), helperEnv+"="+string(env))
	helper.Stdout, helper.Stderr = os.Stderr, os.Stderr
	if DaemonLog != nil { // not the daemon's own pipe to it: a holder outlives the daemon
		helper.Stdout, helper.Stderr = DaemonLog, DaemonLog
	}
	var kept []*os.File
	for _, fd := range keep {
		dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0) // a File of its own: closed once passed
		if err != nil {
			return nil, 0, err
		}
		f := os.NewFile(uintptr(dup), "kept")
		defer f.Close()
		kept = append(kept, f)
	}
	conn, pid, err := startLinked(helper, startIdle, kept...)
	if err != nil {
		return nil, 0, err
	}
	return rpc.NewClient(conn), pid, nil
}

// startLinked starts cmd with start, its end of a socket pair as descriptor 3 and extra as 4, 5, ..., and returns
// this end and its pid; cmd is reaped whenever it ends.
func startLinked(cmd *exec.Cmd, start func(*exec.Cmd) error, extra ...*os.File) (net.Conn, int, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, 0, err
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "sessionfs-parent"), os.NewFile(uintptr(fds[1]), "sessionfs-child")
	defer theirs.Close()
	cmd.ExtraFiles = append([]*os.File{theirs}, extra...)
	if err := start(cmd); err != nil {
		ours.Close()
		return nil, 0, err
	}
	go func() { _ = cmd.Wait() }()
	conn, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		_ = cmd.Process.Kill()
		return nil, 0, err
	}
	return conn, cmd.Process.Pid, nil
}

// RunHelper is the privileged helper of a confined mount, when argv[1] is HelperArg: it binds, unmounts and aborts
// for the daemon until the daemon is gone, and exits; otherwise it returns at once.
func RunHelper() {
	if len(os.Args) < 2 || os.Args[1] != HelperArg {
		return
	}
	if err := serveDaemon(); err != nil {
		fmt.Fprintf(os.Stderr, "sessionfs: privileged helper: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// serveDaemon serves the daemon's calls (helperService) on the socket it was started with, until the daemon is
// gone.
func serveDaemon() error {
	var cfg helperConfig
	if err := json.Unmarshal([]byte(os.Getenv(helperEnv)), &cfg); err != nil {
		return fmt.Errorf("read the configuration: %w (this process is started by sessionfs mount)", err)
	}
	os.Unsetenv(helperEnv)
	leaveIdleClass()
	// A holder outlives the daemon that started it: a write to an output the daemon read must not kill it.
	signal.Ignore(syscall.SIGPIPE)
	// The daemon stops the mount: an interrupt at the terminal reaches both processes, and only the daemon acts.
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	svc := newHelperService(cfg.Mountpoint)
	if cfg.Takeover != nil {
		svc.holder = newHolder(cfg)
	}
	upgraded, err := svc.upgraded() // a holder re-executed as a new binary serves no daemon yet (holder_exec.go)
	if err != nil {
		return err
	}
	var conn net.Conn
	if !upgraded {
		f := os.NewFile(helperFD, "daemon")
		if f == nil {
			return errors.New("descriptor 3 is not open (this process is started by sessionfs mount)")
		}
		conn, err = net.FileConn(f)
		f.Close()
		if err != nil {
			return err
		}
	}
	defer svc.closeControl()
	if cfg.MaxBinds > 0 {
		store, err := layout.OpenStore(cfg.Store)
		if err != nil {
			return err
		}
		sessions, err := layout.OpenDir(store.SessionsDir())
		if err != nil {
			return err
		}
		defer sessions.Close()
		svc.b = newBinder(cfg.Mountpoint, sessions, cfg.MaxBinds, cfg.ReadOnly, svc.lastUsed)
		go svc.b.wantRecent()
	}
	srv := rpc.NewServer()
	if err := srv.RegisterName("Helper", svc); err != nil {
		return err
	}
	// Until the daemon is gone. A daemon killed leaves its binds, as a daemon of one process did: the next mount
	// clears them with the stale mount; unless the helper holds the connection: then it starts a daemon that
	// takes it over, and serves that one (takeover.go).
	daemon := os.Getppid()
	if upgraded {
		svc.listenControlOnce()
		if conn, daemon, err = svc.takeOver(); err != nil || conn == nil {
			svc.upgradeFailed(fmt.Errorf("no daemon of the new binary serves: %v", err))
			return err
		}
	}
	for conn != nil {
		svc.setDaemon(daemon)
		if svc.holder != nil {
			stop := closeOnExit(daemon, conn)
			serveUntilGone(srv, conn) // a call waiting on the mount waits for the next daemon (holder_serve.go)
			stop()
		} else {
			srv.ServeConn(conn)
		}
		if conn, daemon, err = svc.takeOver(); err != nil {
			return err
		}
	}
	return nil
}
