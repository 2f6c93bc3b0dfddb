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
	"runtime"
	"strings"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/confine"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/mount/nodes"
)

// A confined mount is two processes. The daemon mounts, then confines itself (package confine) before it reads
// its first FUSE request, and serves every request from then on: a few capabilities, Landlock to the store, a
// seccomp allow-list without mount, unshare or execve. So a slip in the code that answers the mount's requests
// meets the kernel, not the host. What needs more (binding sessions' folders, unmounting, aborting a hung
// connection) is asked of a small helper it starts before confining itself: the helper (root, holding what the
// bounding set left it: confine.Keep and confine.HelperKeep)
// serves no FUSE request, does nothing else, and takes only session ids and folder names (remote.go).

// HelperArg is argv[1] of the privileged helper: main hands it to RunHelper.
const HelperArg = "__privileged"

// helperEnv carries the helper's configuration (helperConfig, JSON).
const helperEnv = "SESSIONFS_HELPER"

// helperFD is the helper's end of its socket to the daemon.
const helperFD = 3

// helperConfig is what the helper is told.
type helperConfig struct {
	Store, Mountpoint string
	MaxBinds          int
	ReadOnly          bool
}

// Start mounts store at mountpoint as New does, and serves it from this process once it has confined itself
// (root only). ready, when set, runs once the mount is made and before the confinement (it may need what the
// confinement takes away: systemd's notify socket, say).
func Start(store *layout.Store, mountpoint string, opts Options, ready func()) (*Mount, error) {
	if err := opts.Confine.Check(); err != nil {
		return nil, err
	}
	// The bounding set first, while the process is quiet; the helper is started with what it leaves.
	if err := confine.Bound(opts.Confine); err != nil {
		return nil, fmt.Errorf("confine the serving process: %w", err)
	}
	mnt, shared, watched, err := prepare(store, mountpoint, &opts)
	if err != nil {
		return nil, err
	}
	// The helper starts meanwhile: its fork and exec hold up only the thread that makes them. It binds nothing
	// before it is told to begin, once the mount serves.
	starting := make(chan startedHelper, 1)
	go func() {
		c, pid, err := startHelper(helperConfig{Store: store.Root, Mountpoint: mnt, MaxBinds: opts.MaxBinds, ReadOnly: opts.ReadOnly})
		starting <- startedHelper{c, pid, err}
	}()
	abandon := func() { // the helper ends when its socket closes
		if h := <-starting; h.client != nil {
			h.client.Close()
		}
	}
	tree, err := newTree(store, mnt, opts, watched)
	if err != nil {
		abandon()
		return nil, err
	}
	// A plain descriptor, not an *os.File: go-fuse takes it over (a File's finalizer would close it under it).
	dev, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		abandon()
		tree.Close()
		return nil, fmt.Errorf("open /dev/fuse: %w", err)
	}
	if err := mountDirect(store, mnt, opts, dev); err != nil {
		abandon()
		unix.Close(dev)
		tree.Close()
		return nil, mountError(mnt, err)
	}
	fail := func(err error) (*Mount, error) {
		unix.Close(dev)
		_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
		tree.Close()
		return nil, err
	}
	h := <-starting
	helper, helperPID := h.client, h.pid
	if h.err != nil {
		return fail(fmt.Errorf("start the privileged helper: %w", h.err))
	}
	var notify binds
	if opts.MaxBinds > 0 {
		rb := newRemoteBinder(helper)
		tree.Binder = rb
		notify = rb
		go func() { // not waited for: the helper is still starting, and the mount serves meanwhile
			var tid int
			if helper.Call("Binder.Thread", struct{}{}, &tid) == nil {
				tree.SetBinderThread(tid)
			}
			_ = helper.Call("Binder.Begin", struct{}{}, nil)
		}()
	}
	wa, err := startWatcher(tree, notify)
	if err != nil {
		helper.Close()
		return fail(fmt.Errorf("watch the store: %w", err))
	}
	root := nodes.NewRoot(tree)
	syscall.Umask(0)               // modes reach us already masked by the caller's umask
	procs := runtime.GOMAXPROCS(0) // what go-fuse sizes its readers by (procs.go)
	nodeOpts := nodeOptions(mountOptions(store, opts), opts.Timeout)
	server, err := fuse.NewServer(newNoOpendir(gofs.NewNodeFS(root, nodeOpts)), fmt.Sprintf("/dev/fd/%d", dev), &nodeOpts.MountOptions)
	if err != nil {
		wa.close()
		helper.Close()
		return fail(err)
	}
	if ready != nil {
		ready()
	}
	// Confined before the first request is read: everything it needs outside the store is open by now.
	// The helper leaves the idle class before SYS_NICE goes: on a busy machine an idle process gets almost no CPU,
	// and its binds (and the unmount it makes) must not wait for the machine to go quiet.
	openSpliceSink()
	report, err := confine.Serving(store.Root, opts.Confine, func() { wake(helperPID) })
	if err != nil {
		// Serve nothing unconfined: the mount goes (the helper can still unmount), and so does this process.
		_ = helper.Call("Binder.Detach", struct{}{}, nil)
		return nil, fmt.Errorf("confine the serving process: %w", err)
	}
	go server.Serve()
	if err := server.WaitMount(); err != nil {
		return nil, err
	}
	// The kernel asks POLL once: a request from the helper makes it, so that go-fuse can answer ENOSYS. Not
	// waited for: the helper is still starting (its Go runtime's init), and the mount serves meanwhile; the
	// lookups made before it is up are sent to it once it is.
	helper.Go("Binder.PollHack", struct{}{}, nil, make(chan *rpc.Call, 1))
	spareProcs(procs)
	done := make(chan struct{})
	go tree.Prune(root.Sessions(), opts.MaxNodes, done)
	var st syscall.Stat_t
	_ = syscall.Stat(mnt, &st) // the connection is named by the mount's device minor
	return &Mount{Mountpoint: mnt, Store: store, server: server, watcher: wa, tree: tree, Shared: shared, Timeout: opts.Timeout,
		Binding: opts.MaxBinds > 0, done: done, minor: unix.Minor(st.Dev), helper: helper, Confinement: report.String()}, nil
}

// startedHelper is startHelper's result.
type startedHelper struct {
	client *rpc.Client
	pid    int
	err    error
}

// startHelper starts the privileged helper with its end of a socket pair and returns a client of it and its pid.
// The helper ends when the socket closes (this process ends).
func startHelper(cfg helperConfig) (*rpc.Client, int, error) {
	env, err := json.Marshal(cfg)
	if err != nil {
		return nil, 0, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, 0, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, 0, err
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "sessionfs-daemon"), os.NewFile(uintptr(fds[1]), "sessionfs-helper")
	defer theirs.Close()
	helper := exec.Command(exe, HelperArg, cfg.Mountpoint)
	helper.Env = append(os.Environ(), helperEnv+"="+string(env))
	helper.Stdout, helper.Stderr = os.Stderr, os.Stderr
	helper.ExtraFiles = []*os.File{theirs}
	if err := startIdle(helper); err != nil {
		ours.Close()
		return nil, 0, err
	}
	go func() { _ = helper.Wait() }() // reaped, whenever it ends
	conn, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		_ = helper.Process.Kill()
		return nil, 0, err
	}
	return rpc.NewClient(conn), helper.Process.Pid, nil
}

// RunHelper is the privileged helper of a confined mount, when argv[1] is HelperArg: it binds, unmounts and aborts
// for the daemon until the daemon is gone, and exits; otherwise it returns at once.
func RunHelper() {
	if len(os.Args) < 2 || os.Args[1] != HelperArg {
		return
	}
	if err := runHelper(); err != nil {
		fmt.Fprintf(os.Stderr, "sessionfs: privileged helper: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runHelper() error {
	var cfg helperConfig
	if err := json.Unmarshal([]byte(os.Getenv(helperEnv)), &cfg); err != nil {
		return fmt.Errorf("read the configuration: %w (this process is started by sessionfs mount)", err)
	}
	os.Unsetenv(helperEnv)
	helperBusy()
	// The daemon stops the mount: an interrupt at the terminal reaches both processes, and only the daemon acts.
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	f := os.NewFile(helperFD, "daemon")
	if f == nil {
		return errors.New("descriptor 3 is not open (this process is started by sessionfs mount)")
	}
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return err
	}
	svc := newBinderService(cfg.Mountpoint)
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
	if err := srv.RegisterName("Binder", svc); err != nil {
		return err
	}
	// Until the daemon is gone. A daemon killed leaves its binds, as a daemon of one process did: the next mount
	// clears them with the stale mount.
	srv.ServeConn(conn)
	return nil
}

// mountDirect mounts a FUSE connection on dev at mnt with mount(2), with the options go-fuse would give it.
func mountDirect(store *layout.Store, mnt string, opts Options, dev int) error {
	mo := mountOptions(store, opts)
	data := []string{
		fmt.Sprintf("fd=%d", dev),
		fmt.Sprintf("rootmode=%o", syscall.S_IFDIR),
		fmt.Sprintf("user_id=%d", os.Geteuid()),
		fmt.Sprintf("group_id=%d", os.Getegid()),
		fmt.Sprintf("max_read=%d", mo.MaxWrite),
	}
	data = append(data, mo.Options...)
	if mo.AllowOther {
		data = append(data, "allow_other")
	}
	return syscall.Mount(store.Root, mnt, FSType, directFlags(opts), strings.Join(data, ","))
}

// pollHack makes the kernel ask the serving process for POLL once, so that it learns POLL is not supported
// (go-fuse's own mount does this; with a mount made here, the helper does). The helper trusts nothing the mount
// answers: the name is opened beneath the mount's root with no symlink and no mount crossed, and a FIFO or a device
// answered there neither blocks the open (O_NONBLOCK) nor becomes a terminal (O_NOCTTY); the mount is nodev.
func pollHack(mnt string) {
	root, err := unix.Open(mnt, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	fd, err := layout.OpenBeneathNoMounts(root, pollHackName, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	unix.Close(root)
	if err != nil {
		return
	}
	_, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLPRI | unix.POLLOUT}}, 0)
	unix.Close(fd)
}

// pollHackName is the name go-fuse answers for the POLL probe (its fuse/poll.go).
const pollHackName = ".go-fuse-epoll-hack"

// unmountConfined unmounts a confined mount through its helper: the binds, then the mount (retried a moment while
// the kernel finishes releasing files); an error says it is busy.
func (m *Mount) unmountConfined() error {
	if err := m.helper.Call("Binder.Unmount", struct{}{}, nil); err != nil {
		return fmt.Errorf("unmount %s: %v", m.Mountpoint, err)
	}
	return nil
}
