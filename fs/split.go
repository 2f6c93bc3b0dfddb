package fs

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
)

// A confined mount is two processes. The parent (root, every capability) mounts, binds sessions' folders,
// unmounts and aborts: it serves no FUSE request and reads nothing a session wrote but the folders it binds, by
// descriptor. The child serves every FUSE request, confined (package confine) before it reads its first one:
// a few capabilities, Landlock to the store, a seccomp allow-list without mount, unshare or execve. So a slip in
// the code that answers the mount's requests meets the kernel, not the host.

// ServerArg is argv[1] of the serving process: main hands it to RunServer.
const ServerArg = "__serve"

// serverEnv carries the serving process's configuration (ServerConfig, JSON).
const serverEnv = "SESSIONFS_SERVER"

// The serving process's descriptors.
const (
	fuseFD    = 3 // the FUSE connection the parent mounted
	binderFD  = 4 // calls to the parent's binder
	lifeFD    = 5 // the lifeline: it reads end of file when the parent is gone
	childFDs  = 3
	startWait = 30 * time.Second
)

// ServerConfig is what the serving process is told.
type ServerConfig struct {
	Store      string
	Mountpoint string
	Options    Options
	Watched    time.Duration
	Binding    bool
}

// Start mounts store at mountpoint as New does, and serves it from a confined child process (root only).
func Start(store *layout.Store, mountpoint string, opts Options) (*Mount, error) {
	if err := opts.Confine.Check(); err != nil {
		return nil, err
	}
	mnt, shared, watched, err := prepare(store, mountpoint, &opts)
	if err != nil {
		return nil, err
	}
	sessions, err := layout.OpenDir(store.SessionsDir())
	if err != nil {
		return nil, fmt.Errorf("open the store: %w", err)
	}
	closeAll := func(fs ...*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	dev, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		sessions.Close()
		return nil, err
	}
	if err := mountDirect(store, mnt, opts, dev); err != nil {
		closeAll(dev)
		sessions.Close()
		return nil, mountError(mnt, err)
	}
	// From here a failure unmounts again.
	fail := func(err error) (*Mount, error) {
		_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
		sessions.Close()
		return nil, err
	}
	binderP, binderC, err := socketPair()
	if err != nil {
		closeAll(dev)
		return fail(err)
	}
	lifeP, lifeC, err := socketPair()
	if err != nil {
		closeAll(dev, binderP, binderC)
		return fail(err)
	}
	child, exited, err := spawn(mnt, ServerConfig{Store: store.Root, Mountpoint: mnt, Options: opts, Watched: watched,
		Binding: opts.MaxBinds > 0}, dev, binderC, lifeC)
	// The child holds the connection now: with the parent's copy closed, the connection ends when the child does
	// (the mount then reads "not connected" rather than hanging).
	closeAll(dev, binderC, lifeC)
	if err != nil {
		closeAll(binderP, lifeP)
		return fail(fmt.Errorf("start the serving process: %w", err))
	}

	svc := newBinderService()
	var bd *binder
	if opts.MaxBinds > 0 {
		bd = newBinder(mnt, sessions, opts.MaxBinds, opts.ReadOnly, svc.lastUsed)
		svc.b = bd
	}
	srv := rpc.NewServer()
	if err := srv.RegisterName("Binder", svc); err != nil {
		panic(err) // a programming error: the service's methods are fixed
	}
	binderConn, err := net.FileConn(binderP)
	binderP.Close()
	if err != nil {
		_ = child.Process.Kill()
		lifeP.Close()
		return fail(err)
	}
	go srv.ServeConn(binderConn)

	var report string
	select {
	case report = <-svc.ready:
	case err := <-exited:
		if bd != nil {
			bd.close()
		}
		return fail(fmt.Errorf("the serving process ended before it served: %v", err))
	case <-time.After(startWait):
		_ = child.Process.Kill()
		<-exited
		if bd != nil {
			bd.close()
		}
		return fail(fmt.Errorf("the serving process did not serve within %s", startWait))
	}
	pollHack(mnt)
	var st syscall.Stat_t
	_ = syscall.Stat(mnt, &st) // served by now; the connection is named by the mount's device minor
	if bd != nil {
		go bd.wantRecent()
	}
	return &Mount{Mountpoint: mnt, Store: store, Shared: shared, Timeout: opts.Timeout, Binding: bd != nil, binder: bd,
		minor: unix.Minor(st.Dev), child: child, exited: exited, Confinement: report,
		closeSplit: func() { lifeP.Close(); binderConn.Close(); sessions.Close() }}, nil
}

// spawn starts the serving process for the mount at mnt, handing it files (the FUSE connection, its ends of the
// socket pairs) as descriptors 3 and on; exited reports its end.
func spawn(mnt string, cfg ServerConfig, files ...*os.File) (*exec.Cmd, chan error, error) {
	env, err := json.Marshal(cfg)
	if err != nil {
		return nil, nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	child := exec.Command(exe, ServerArg, mnt)
	child.Env = append(os.Environ(), serverEnv+"="+string(env))
	child.Stdout, child.Stderr = os.Stderr, os.Stderr
	child.ExtraFiles = files
	// The serving process dies with this one (a crash, a SIGKILL), as a daemon of one process would: the mount
	// is then "not connected" at once, and the next mount clears it. The kernel sends the signal when the thread
	// that started the child ends, so that thread stays locked until the child is gone.
	child.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started, exited := make(chan error, 1), make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := child.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- child.Wait()
	}()
	if err := <-started; err != nil {
		return nil, nil, err
	}
	return child, exited, nil
}

// mountDirect mounts a FUSE connection on dev at mnt with mount(2), with the options go-fuse would give it.
func mountDirect(store *layout.Store, mnt string, opts Options, dev *os.File) error {
	mo := mountOptions(store, opts)
	data := []string{
		fmt.Sprintf("fd=%d", dev.Fd()),
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
// (go-fuse's own mount does this; with a mount made here, the parent does).
func pollHack(mnt string) {
	fd, err := unix.Open(filepath.Join(mnt, ".go-fuse-epoll-hack"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	_, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLPRI | unix.POLLOUT}}, 0)
	unix.Close(fd)
}

// socketPair is a connected pair of unix stream sockets.
func socketPair() (parent, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "sessionfs-parent"), os.NewFile(uintptr(fds[1]), "sessionfs-child"), nil
}

// waitChild waits for the serving process to end and says how it ended (nil: it served until unmounted).
func (m *Mount) waitChild() error {
	err := <-m.exited
	m.exited <- err // for a second caller
	if m.binder != nil {
		m.binder.close()
	}
	m.closeSplit()
	if err != nil {
		// A crash leaves the mount "not connected": detach it, so the mountpoint is usable again.
		DetachBinds(m.Mountpoint)
		_ = syscall.Unmount(m.Mountpoint, syscall.MNT_DETACH)
		return fmt.Errorf("the serving process ended: %w (%s is unmounted)", err, m.Mountpoint)
	}
	return nil
}

// unmountSplit unmounts a confined mount: its binds, then the mount (retried a moment, as go-fuse does, while
// the kernel finishes releasing files), after which the serving process ends.
func (m *Mount) unmountSplit() error {
	if m.binder != nil {
		m.binder.close()
	}
	var err error
	for try, delay := 0, time.Duration(0); try < 5; try++ {
		if err = syscall.Unmount(m.Mountpoint, 0); err == nil || !errors.Is(err, syscall.EBUSY) {
			break
		}
		delay = 2*delay + 5*time.Millisecond
		time.Sleep(delay)
	}
	if err != nil {
		return fmt.Errorf("unmount %s: %w", m.Mountpoint, err)
	}
	return nil
}

// ServingPID finds the serving process of the confined mount at mnt by its command line.
func ServingPID(mnt string) (int, bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	want := ServerArg + "\x00" + mnt + "\x00"
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if _, rest, ok := strings.Cut(string(b), "\x00"); ok && rest == want {
			var pid int
			if _, err := fmt.Sscan(e.Name(), &pid); err == nil {
				return pid, true
			}
		}
	}
	return 0, false
}
