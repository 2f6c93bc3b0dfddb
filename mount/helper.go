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
	"runtime/debug"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/internal/selfexec"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/mount/takeover"
)

// A confined mount is two processes. The daemon mounts, then confines itself (package confine) before it reads
// its first FUSE request, and serves every request from then on: a few capabilities, Landlock to the store, a
// seccomp allow-list without mount, unshare or execve. So a slip in the code that answers the mount's requests
// meets the kernel, not the host. What needs more (binding sessions' folders, unmounting, aborting a hung
// connection) is asked of a small helper it starts before confining itself: the helper (root, holding what the
// bounding set left it: confine.Keep and confine.HelperKeep) serves no FUSE request, does nothing else, and takes
// only session ids and folder names (helper_service.go). This file starts it and runs it.

// DaemonLog, when set, is where the helper writes, and the daemons a holder starts: the daemon's log file, when the
// daemon's own output is a pipe that ends with it (mount --daemon's time-stamping).
var DaemonLog *os.File

// helperConfig is what the helper is told.
type helperConfig struct {
	Store, Mountpoint string
	MaxBinds          int
	ReadOnly          bool
	// DockerVolumes: the Docker volume plugin the helper serves (Options.DockerVolumes); "" none.
	DockerVolumes string
	// Takeover, when set, is the mount's options: the helper holds the connection (takeover.DevFD) and the node log
	// (takeover.NodesFD), and starts a daemon with them when the serving one dies (package mount/takeover).
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
	helper := exec.Command(exe, selfexec.Helper, cfg.Mountpoint)
	helper.Env = append(os.Environ(), selfexec.HelperEnv+"="+string(env))
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
	conn, pid, err := selfexec.StartLinked(helper, startIdle, kept...)
	if err != nil {
		return nil, 0, err
	}
	return rpc.NewClient(conn), pid, nil
}

// RunHelper is the privileged helper of a confined mount, when argv[1] is selfexec.Helper: it binds, unmounts and aborts
// for the daemon until the daemon is gone, and exits; otherwise it returns at once.
func RunHelper() { selfexec.Run(selfexec.Helper, "privileged helper", serveDaemon) }

// serveDaemon serves the daemon's calls (helperService) on the socket it was started with, until the daemon is
// gone.
func serveDaemon() error {
	var cfg helperConfig
	raw := os.Getenv(selfexec.HelperEnv)
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return fmt.Errorf("read the configuration: %w (this process is started by sessionfs mount)", err)
	}
	os.Unsetenv(selfexec.HelperEnv)
	leaveIdleClass()
	// Little is live here (a bind's or a hand-over's few objects at a time): the collector's default let the heap
	// reach 5 MiB after a walk of 10,000 sessions, which no one gave back; a quarter of live over 1 MiB is room.
	debug.SetGCPercent(25)
	// A holder outlives the daemon that started it: a write to an output the daemon read must not kill it.
	signal.Ignore(syscall.SIGPIPE)
	// The daemon stops the mount: an interrupt at the terminal reaches both processes, and only the daemon acts.
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	svc := newHelperService(cfg.Mountpoint)
	var holder *takeover.Holder
	upgraded := false
	if cfg.Takeover != nil {
		var held takeover.Config
		if err := json.Unmarshal([]byte(raw), &held); err != nil {
			return err
		}
		var err error
		if holder, upgraded, err = takeover.NewHolder(held, holderHost{svc}); err != nil {
			return err
		}
	} else if takeover.HandedOver() {
		return errors.New("handed a mount over without its connection")
	}
	var conn net.Conn
	if !upgraded {
		f := os.NewFile(selfexec.LinkedFD, "daemon")
		if f == nil {
			return errors.New("descriptor 3 is not open (this process is started by sessionfs mount)")
		}
		var err error
		conn, err = net.FileConn(f)
		f.Close()
		if err != nil {
			return err
		}
	}
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
		go func() {
			svc.b.wantRecent()
			// Its listing of every session was this process's largest heap (4 MiB at 10,000 sessions), and the
			// runtime keeps what its heap reached: handed back now, the holder stays at what it needs.
			debug.FreeOSMemory()
		}()
	}
	if cfg.DockerVolumes != "" {
		stop, err := serveDockerVolumes(cfg)
		if err != nil {
			return err
		}
		defer stop()
	}
	srv := rpc.NewServer()
	if err := srv.RegisterName("Helper", svc); err != nil {
		return err
	}
	// Until the daemon is gone. A daemon killed leaves its binds, as a daemon of one process did: the next mount
	// clears them with the stale mount; unless the helper holds the connection: then its holder starts a daemon
	// that takes it over, and serves that one (mount/takeover).
	if holder == nil {
		srv.ServeConn(conn)
		return nil
	}
	if err := srv.RegisterName("Holder", holder); err != nil {
		return err
	}
	return holder.Serve(srv, conn, os.Getppid(), upgraded)
}
