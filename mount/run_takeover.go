package mount

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/internal/selfexec"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/mount/nodes"
	"github.com/sessionfs/sessionfs/mount/takeover"
	"github.com/sessionfs/sessionfs/mount/takeover/nodelog"
)

// RunTakeover is a daemon taking a mount's connection over, when argv[1] is selfexec.Takeover: it serves until the
// mount ends, and exits; otherwise it returns at once.
func RunTakeover() {
	selfexec.Run(selfexec.Takeover, "the daemon taking the mount over", serveTakenOver)
}

func serveTakenOver() error {
	var cfg takeover.DaemonConfig
	if err := json.Unmarshal([]byte(os.Getenv(selfexec.TakeoverEnv)), &cfg); err != nil {
		return fmt.Errorf("read the configuration: %w (this process is started by the mount's helper)", err)
	}
	os.Unsetenv(selfexec.TakeoverEnv)
	takeoverFault()
	// The helper stops the mount on the daemon's word only: an interrupt is this process's to act on.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	store, err := layout.OpenStore(cfg.Store)
	if err != nil {
		return err
	}
	f := os.NewFile(selfexec.LinkedFD, "helper")
	if f == nil {
		return errors.New("descriptor 3 is not open (this process is started by the mount's helper)")
	}
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return err
	}
	unix.CloseOnExec(takeover.DevFD)
	nodeLog, err := nodelog.Map(takeover.NodesFD)
	if err != nil {
		return err
	}
	root := os.Geteuid() == 0 // a normal user's daemon is not confined (fusermount.go)
	taken := &takenOver{heldDaemon: heldDaemon{user: !root, nodes: nodeLog},
		taking: takeover.Taking{Dev: takeover.DevFD, Init: cfg.Init, Fatal: cfg.Fatal}}
	var opts Options
	if err := json.Unmarshal(cfg.Options, &opts); err != nil {
		return fmt.Errorf("read the mount's options: %w", err)
	}
	s := &startup{store: store, mountpoint: cfg.Mountpoint, opts: opts, given: opts, confined: root,
		keep: taken, helper: rpc.NewClient(conn), helperPID: os.Getppid()}
	limited := make(chan struct{}) // the heap held as the mount command holds its daemon's (nodes.LimitMemory)
	defer close(limited)
	go nodes.LimitMemory(nodes.MemoryFloor, limited)
	m, err := s.start(nil)
	if err != nil {
		return err
	}
	go unmountOnSignal(m, sigs) // the holder logs the takeover (Served)
	return m.Wait()
}

// unmountOnSignal unmounts on the first signal, and detaches a busy mount.
func unmountOnSignal(m *Mount, sigs <-chan os.Signal) {
	<-sigs
	if m.Unmount() != nil {
		_ = m.Detach()
	}
}
