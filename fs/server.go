package fs

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	gofs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/sessionfs/sessionfs/confine"
	"github.com/sessionfs/sessionfs/fs/nodes"
	"github.com/sessionfs/sessionfs/layout"
)

// RunServer is the serving process of a confined mount (split.go), when argv[1] is ServerArg: it serves until
// the mount is unmounted and exits; otherwise it returns at once. onCreate gives the hook run after a mkdir
// through the mount made a session.
func RunServer(onCreate func(s *layout.Store, mnt string) func(id string) error) {
	if len(os.Args) < 2 || os.Args[1] != ServerArg {
		return
	}
	if err := runServer(onCreate); err != nil {
		fmt.Fprintf(os.Stderr, "sessionfs: serving process: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runServer(onCreate func(s *layout.Store, mnt string) func(id string) error) error {
	var cfg ServerConfig
	if err := json.Unmarshal([]byte(os.Getenv(serverEnv)), &cfg); err != nil {
		return fmt.Errorf("read the configuration: %w (this process is started by sessionfs mount)", err)
	}
	os.Unsetenv(serverEnv)
	// The parent stops the mount: an interrupt at the terminal reaches both processes, and only the parent acts.
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	store, err := layout.OpenStore(cfg.Store)
	if err != nil {
		return err
	}
	opts := cfg.Options
	opts.OnCreate = onCreate(store, cfg.Mountpoint)
	tree, err := newTree(store, opts, cfg.Watched)
	if err != nil {
		return err
	}
	defer tree.Close()
	binderConn, err := fileConn(binderFD, "binder")
	if err != nil {
		return err
	}
	binderClient := rpc.NewClient(binderConn)
	var notify binds
	if cfg.Binding {
		rb := newRemoteBinder(binderClient)
		tree.OnSession, tree.Removing = rb.want, rb.removingSession
		notify = rb
	}
	wa, err := startWatcher(tree, notify)
	if err != nil {
		return fmt.Errorf("watch the store: %w", err)
	}
	defer wa.close()
	life := os.NewFile(lifeFD, "lifeline")
	if life == nil {
		return fmt.Errorf("descriptor %d (the lifeline) is not open (this process is started by sessionfs mount)", lifeFD)
	}
	root := nodes.NewRoot(tree, opts.OnCreate)
	syscall.Umask(0) // modes reach us already masked by the caller's umask
	mo := mountOptions(store, opts)
	procs := runtime.GOMAXPROCS(0) // what go-fuse sizes its readers by (procs.go)
	nodeOpts := nodeOptions(mo, opts.Timeout)
	server, err := fuse.NewServer(newNoOpendir(gofs.NewNodeFS(root, nodeOpts)), fmt.Sprintf("/dev/fd/%d", fuseFD), &nodeOpts.MountOptions)
	if err != nil {
		return err
	}
	// Confined before the first request is read: everything it needs outside the store is open by now.
	report, err := confine.Serving(store.Root, opts.Confine)
	if err != nil {
		return fmt.Errorf("confine: %w", err)
	}
	go func() {
		// The parent gone (killed, and Pdeathsig missed it): stop serving, as a daemon that died would; the next
		// mount clears it.
		_, _ = io.Copy(io.Discard, life)
		os.Exit(2)
	}()
	go server.Serve()
	if err := server.WaitMount(); err != nil {
		return err
	}
	spareProcs(procs)
	done := make(chan struct{})
	go tree.Prune(root.Sessions(), opts.MaxNodes, done)
	if err := binderClient.Call("Binder.Ready", report.String(), nil); err != nil {
		return fmt.Errorf("tell the parent: %w", err)
	}
	server.Wait()
	close(done)
	return nil
}

// fileConn is the inherited socket at fd as a net.Conn.
func fileConn(fd int, name string) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), name)
	if f == nil {
		return nil, fmt.Errorf("descriptor %d (%s) is not open (this process is started by sessionfs mount)", fd, name)
	}
	defer f.Close()
	return net.FileConn(f)
}
