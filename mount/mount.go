package mount

import (
	"errors"
	"fmt"
	"net/rpc"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/confine"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/mount/nodes"
)

// Options configure a mount.
type Options struct {
	// AllowOther lets users other than the mounting one (containers running as another uid) use the mount.
	AllowOther bool
	// ReadOnly mounts read-only: the kernel refuses every change with EROFS.
	ReadOnly bool
	// Debug logs every FUSE request.
	Debug bool
	// Timeout is how long the kernel may cache names and attributes; 0 means WatchedTimeout for the store's
	// names while the watcher follows them and DefaultTimeout for the rest, or SharedTimeout when the store is
	// shared with other hosts.
	Timeout time.Duration
	// Shared says the store is shared with other hosts even when its filesystem is not recognised as such.
	Shared bool
	// MaxNodes is how many files and folders the daemon keeps for the kernel before it asks the kernel to
	// forget the least recently used sessions' (0: nodes.DefaultMaxNodes; negative: never).
	MaxNodes int64
	// MaxBinds is how many sessions have their heavy folders bound over the mount at once (binds.go); 0 means
	// DefaultMaxBinds, negative none. Binds need a direct mount (root).
	MaxBinds int
	// Confine says how the serving process of a mount made by Start confines itself.
	Confine confine.Options
}

// Mount serves store at mountpoint until Unmount. A stale mount left at mountpoint by a crashed daemon is
// cleared first; a live one is an error.
type Mount struct {
	Mountpoint string
	Store      *layout.Store
	server     *fuse.Server
	watcher    *watcher
	tree       *nodes.Tree
	// Shared names the store's filesystem when other hosts may change it ("fuse.juicefs", "nfs", "--shared");
	// empty when only this host does.
	Shared string
	// Timeout is how long the kernel caches names and attributes.
	Timeout time.Duration
	// Binding says whether the mount binds sessions' heavy folders (root, --max-binds not 0).
	Binding bool
	binder  *binder
	minor   uint32        // the FUSE connection's number, to abort it once detached (Abort)
	done    chan struct{} // stops the pruner

	// helper is a confined mount's privileged helper (Start); nil for a mount of New.
	helper *rpc.Client
	// Confinement says what confines the serving process ("" for an unconfined mount).
	Confinement string
}

// DefaultTimeout is how long the kernel may cache names and attributes that are not the store's files and
// folders (the synthetic folders, names found missing), and the store's own once a folder cannot be watched.
const DefaultTimeout = 30 * time.Second

// WatchedTimeout is how long the kernel may cache the store's names and attributes while the watcher follows
// every folder the kernel holds: a change made behind the mount then invalidates exactly what it changed, so
// the timeout only bounds what no event reports (a write through a shared mmap moves no mtime event).
const WatchedTimeout = time.Hour

// New mounts store at mountpoint (creating the folder if need be) and starts serving, unconfined. Start
// (split.go) serves confined, with a privileged helper.
func New(store *layout.Store, mountpoint string, opts Options) (*Mount, error) {
	mnt, shared, watched, err := prepare(store, mountpoint, &opts)
	if err != nil {
		return nil, err
	}
	tree, err := newTree(store, mnt, opts, watched)
	if err != nil {
		return nil, err
	}
	// Binds are made by the daemon itself with mount(2)'s new API: root only (a normal user's mount goes
	// through fusermount3, and all of it through FUSE).
	var bd *binder
	var notify binds
	if os.Geteuid() == 0 && opts.MaxBinds > 0 {
		bd = newBinder(mnt, tree.Sessions(), opts.MaxBinds, opts.ReadOnly, func(ids []string) map[string]int64 { return lastUsed(tree, ids) })
		tree.Binder = bd
		tree.SetBinderThread(bd.thread())
		bd.start()
		notify = bd
	}
	wa, err := startWatcher(tree, notify)
	if err != nil {
		tree.Close()
		return nil, fmt.Errorf("watch the store: %w", err)
	}
	root := nodes.NewRoot(tree)
	// Modes reach us already masked by the caller's umask; the daemon's own must not mask them again.
	syscall.Umask(0)
	mo := mountOptions(store, opts)
	if os.Geteuid() == 0 {
		// Root mounts with mount(2) itself and never falls back to fusermount, which a fresh machine lacks
		// (and whose fallback would hide a broken direct mount).
		mo.DirectMountStrict = true
		mo.DirectMountFlags = directFlags(opts)
	} else {
		mo.Options = append(mo.Options, "noatime") // fusermount3 turns these into flags
		if opts.ReadOnly {
			mo.Options = append(mo.Options, "ro")
		}
	}
	procs := runtime.GOMAXPROCS(0) // what go-fuse sizes its readers by (procs.go)
	stopBinder := func() {
		if bd != nil {
			bd.close()
		}
	}
	server, err := serve(mnt, root, nodeOptions(mo, opts.Timeout))
	if err != nil {
		stopBinder()
		wa.close()
		tree.Close()
		return nil, mountError(mnt, err)
	}
	if bd != nil {
		go bd.wantRecent()
	}
	spareProcs(procs)
	done := make(chan struct{})
	go tree.Prune(root.Sessions(), opts.MaxNodes, done)
	var st syscall.Stat_t
	_ = syscall.Stat(mnt, &st) // served by now; the connection is named by the mount's device minor
	return &Mount{Mountpoint: mnt, Store: store, server: server, watcher: wa, tree: tree, Shared: shared, Timeout: opts.Timeout,
		Binding: bd != nil, binder: bd, done: done, minor: unix.Minor(st.Dev)}, nil
}

// prepare checks the places and the mountpoint and settles opts' defaults: the kernel caches' timeout (watched:
// the longer one for the store's names while the watcher follows them), the node and bind limits. shared names a
// store other hosts change too ("" if none).
func prepare(store *layout.Store, mountpoint string, opts *Options) (mnt, shared string, watched time.Duration, err error) {
	if mnt, err = filepath.Abs(mountpoint); err != nil {
		return "", "", 0, err
	}
	if err := checkFUSE(); err != nil {
		return "", "", 0, err
	}
	nodes.RaiseFileLimit() // the callers' shares of descriptors are sized from it (nodes/opens.go)
	if err := checkPlaces(store, mnt); err != nil {
		return "", "", 0, err
	}
	if err := prepareMountpoint(mnt); err != nil {
		return "", "", 0, err
	}
	shared, isShared := SharedStore(store.Root)
	if opts.Shared && !isShared {
		shared, isShared = "--shared", true
	}
	if !isShared {
		shared = ""
	}
	switch { // the user's timeout, and a shared store's, hold for everything
	case opts.Timeout != 0:
	case isShared:
		opts.Timeout = SharedTimeout
	default:
		opts.Timeout, watched = DefaultTimeout, WatchedTimeout
	}
	if opts.MaxBinds == 0 {
		opts.MaxBinds = DefaultMaxBinds
	}
	if opts.MaxNodes == 0 {
		opts.MaxNodes = nodes.DefaultMaxNodes
	}
	return mnt, shared, watched, nil
}

// newTree opens the store's tree of nodes as opts and the watcher want it.
func newTree(store *layout.Store, mnt string, opts Options, watched time.Duration) (*nodes.Tree, error) {
	tree, err := nodes.NewTree(store)
	if err != nil {
		return nil, fmt.Errorf("open the store: %w", err)
	}
	tree.Mountpoint, tree.ReadOnly = mnt, opts.ReadOnly
	tree.Timeout, tree.WatchedTimeout = opts.Timeout, watched
	return tree, nil
}

// lastUsed is when each of ids was last used through the mount.
func lastUsed(tree *nodes.Tree, ids []string) map[string]int64 {
	out := make(map[string]int64, len(ids))
	for _, id := range ids {
		out[id] = tree.LastUsed(id)
	}
	return out
}

// maxRead is the largest read and write the kernel sends (go-fuse's default), set here because a mount made by
// the daemon itself (split.go) must tell the kernel the same as it tells go-fuse.
const maxRead = 128 << 10

// mountOptions are go-fuse's options for a mount of store.
func mountOptions(store *layout.Store, opts Options) fuse.MountOptions {
	mo := fuse.MountOptions{
		FsName:        store.Root,
		Name:          "sessionfs",
		AllowOther:    opts.AllowOther,
		Debug:         opts.Debug,
		MaxBackground: 64,
		MaxWrite:      maxRead,
		// Without it every write asks for security.capability first; with it the nodes clear suid/sgid.
		ExtraCapabilities: fuse.CAP_HANDLE_KILLPRIV_V2,
		// The kernel caches ACLs (ls -l asks for one per file) and checks permissions itself.
		EnableAcl: true,
		// Locks are taken on the store's files (nodes/locks.go): they must stop the ones taken through a bind.
		EnableLocks: true,
	}
	if opts.AllowOther && os.Geteuid() == 0 {
		// The kernel, not the daemon (which runs as root and could do anything), checks permissions.
		mo.Options = append(mo.Options, "default_permissions")
	}
	return mo
}

// directFlags are the flags of a mount made with mount(2). Flags go as flags: the kernel refuses them as data
// options with EINVAL. noatime: the store keeps its own atimes.
func directFlags(opts Options) uintptr {
	flags := uintptr(syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOATIME)
	if opts.ReadOnly {
		flags |= syscall.MS_RDONLY
	}
	return flags
}

// nodeOptions are go-fuse's node options for a mount with these mount options and this cache timeout.
func nodeOptions(mo fuse.MountOptions, timeout time.Duration) *gofs.Options {
	return &gofs.Options{
		MountOptions:    mo,
		EntryTimeout:    &timeout,
		AttrTimeout:     &timeout,
		NegativeTimeout: &timeout,
		// A file of mode 0000 is shown as 0000 (go-fuse would show 0644).
		NullPermissions: true,
	}
}

// serve mounts root at mnt and serves it, folders without OPENDIR (opendir.go).
func serve(mnt string, root gofs.InodeEmbedder, opts *gofs.Options) (*fuse.Server, error) {
	server, err := fuse.NewServer(newNoOpendir(gofs.NewNodeFS(root, opts)), mnt, &opts.MountOptions)
	if err != nil {
		return nil, err
	}
	go server.Serve()
	if err := server.WaitMount(); err != nil {
		return nil, err // the serve loop ends with the failed mount
	}
	return server, nil
}

// Wait blocks until the mount is unmounted.
func (m *Mount) Wait() error {
	m.server.Wait() // a confined mount's helper ends with this process (its socket closes)
	if m.binder != nil {
		m.binder.close()
	}
	close(m.done)
	m.watcher.close()
	m.tree.Close()
	return nil
}

// Abort ends the mount's FUSE connection (through fusectl): the processes still using a mount detached lazily get
// errors, and Wait returns.
func (m *Mount) Abort() error {
	if m.helper != nil {
		return m.helper.Call("Binder.Abort", struct{}{}, nil)
	}
	return abortMinor(m.minor)
}

// Detach detaches a busy mount lazily (and its binds): it is served until its last user leaves.
func (m *Mount) Detach() error {
	if m.helper != nil {
		return m.helper.Call("Binder.Detach", struct{}{}, nil)
	}
	return Unmount(m.Mountpoint)
}

// Users lists the processes that keep the mount busy ("pid name").
func (m *Mount) Users() []string {
	if m.helper != nil {
		var out []string
		_ = m.helper.Call("Binder.Users", struct{}{}, &out)
		return out
	}
	return Users(m.Mountpoint)
}

// Unmount detaches the mount (go-fuse retries a busy one for a moment; the caller can then detach it lazily
// with the package's Unmount).
func (m *Mount) Unmount() error {
	if m.helper != nil {
		return m.unmountConfined()
	}
	// The binds beneath it first: a mount with mounts on it is busy.
	if m.binder != nil {
		m.binder.close()
	}
	if err := m.server.Unmount(); err != nil {
		return fmt.Errorf("unmount %s: %w", m.Mountpoint, err)
	}
	return nil
}

func checkFUSE() error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New("FUSE is not available: /dev/fuse is missing (load the fuse module; in a container, pass --device /dev/fuse)")
	case errors.Is(err, os.ErrPermission):
		return errors.New("no permission to open /dev/fuse (add yourself to the fuse group, or run as root)")
	case err != nil:
		return fmt.Errorf("open /dev/fuse: %w", err)
	}
	f.Close()
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			return errors.New("mounting as a normal user needs fusermount3 (apt-get install fuse3), or run as root")
		}
	}
	return nil
}

// prepareMountpoint makes sure mnt is a folder we can mount on, clearing a stale mount of a crashed daemon.
func prepareMountpoint(mnt string) error {
	if isMountpoint(mnt) {
		// A daemon that died leaves "transport endpoint is not connected", or a hung connection.
		if err := probe(mnt); isStale(err) {
			if err := forceUnmount(mnt, err); err != nil {
				return fmt.Errorf("%s holds a stale mount of a crashed daemon and it could not be cleared: %w", mnt, err)
			}
		}
	}
	st, err := os.Stat(mnt)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(mnt, 0o755); err != nil {
			return fmt.Errorf("create mountpoint %s: %w", mnt, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("mountpoint %s: %w", mnt, err)
	case !st.IsDir():
		return fmt.Errorf("mountpoint %s is not a folder", mnt)
	}
	if isMountpoint(mnt) {
		return fmt.Errorf("%s is already mounted (sessionfs unmount %s)", mnt, mnt)
	}
	// Mounting over a folder hides what it holds: refuse, rather than make files vanish without a word. Folders
	// that hold nothing but folders hide nothing (a container engine that did not see the mount made them).
	if !onlyFolders(mnt, 0) {
		return fmt.Errorf("mountpoint %s is not empty (mounting would hide what it holds): empty it or pick another folder", mnt)
	}
	return nil
}

// checkPlaces refuses a mountpoint inside the store (the daemon would serve its own mount back to itself,
// without end) or a store inside the mountpoint, and a store that is already mounted elsewhere (two daemons
// would race each other's caches).
func checkPlaces(store *layout.Store, mnt string) error {
	real := func(p string) string {
		// The mountpoint may not exist yet: resolve its nearest existing parent.
		for dir, rest := p, ""; ; dir, rest = filepath.Dir(dir), filepath.Join(filepath.Base(dir), rest) {
			if r, err := filepath.EvalSymlinks(dir); err == nil {
				return filepath.Join(r, rest)
			}
			if dir == "/" || dir == "." {
				return p
			}
		}
	}
	root, m := real(store.Root), real(mnt)
	within := func(a, b string) bool { return a == b || strings.HasPrefix(a, strings.TrimSuffix(b, "/")+"/") }
	switch {
	case within(m, root):
		return fmt.Errorf("mountpoint %s is inside the store %s: pick a folder outside it", mnt, store.Root)
	case within(root, m):
		return fmt.Errorf("the store %s is inside the mountpoint %s: pick a folder outside it", store.Root, mnt)
	}
	if other, ok := Find(store.Root); ok && other.Mountpoint != mnt {
		if err := probe(other.Mountpoint); !isStale(err) {
			return fmt.Errorf("the store %s is already mounted at %s (sessionfs unmount %s first)", store.Root, other.Mountpoint, other.Mountpoint)
		}
	}
	return nil
}

// isMountpoint reports whether something is mounted at mnt. It reads the mount table rather than stat mnt,
// which would hang on a hung mount.
func isMountpoint(mnt string) bool {
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(mnt))
	return err == nil && len(mounts) > 0
}

// ErrBusy is returned (wrapped) by Unmount when the mount was busy and was detached lazily: it is gone from the
// namespace now, and the kernel finishes when the last process using it leaves.
var ErrBusy = errors.New("busy: detached lazily; the kernel finishes when the last process using it leaves")

// Unmount detaches the sessionfs (or stale) mount at mountpoint, as root with umount(2), otherwise with
// fusermount3. Any other filesystem mounted there is refused.
func Unmount(mountpoint string) error {
	mnt, err := filepath.Abs(mountpoint)
	if err != nil {
		return err
	}
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(mnt))
	if err != nil || len(mounts) == 0 {
		if _, err := os.Stat(mnt); err != nil {
			return fmt.Errorf("unmount %s: %w", mnt, err)
		}
		return fmt.Errorf("%s is not mounted", mnt)
	}
	if top := mounts[len(mounts)-1]; top.FSType != FSType {
		return fmt.Errorf("%s is a %s mount, not a sessionfs one: not unmounting it", mnt, top.FSType)
	}
	if err := probe(mnt); isStale(err) {
		return forceUnmount(mnt, err)
	}
	if os.Geteuid() == 0 {
		// The daemon detaches its binds as it stops; a mount with binds on it is busy, so they go first.
		DetachBinds(mnt)
		if syscall.Unmount(mnt, 0) == nil {
			return nil
		}
	} else if exec.Command("fusermount3", "-u", mnt).Run() == nil {
		return nil
	}
	// Busy (a shell's cwd is inside): detach now, the kernel finishes when the last user leaves.
	if err := forceUnmount(mnt, nil); err != nil {
		return err
	}
	return fmt.Errorf("%s: %w", mnt, ErrBusy)
}

// forceUnmount lazily detaches mnt, aborting its connection first when probed reports it hung.
func forceUnmount(mnt string, probed error) error {
	if errors.Is(probed, errHung) {
		if err := abortConnection(mnt); err != nil {
			return err
		}
	}
	if os.Geteuid() == 0 {
		if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
			return fmt.Errorf("unmount %s: %w", mnt, err)
		}
		return nil
	}
	if out, err := exec.Command("fusermount3", "-u", "-z", mnt).CombinedOutput(); err != nil {
		return fmt.Errorf("fusermount3 -u -z %s: %v: %s", mnt, err, out)
	}
	return nil
}

func mountError(mnt string, err error) error {
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
		return fmt.Errorf("mount %s: permission denied (run as root, or install fuse3 and allow user mounts; --allow-other needs user_allow_other in /etc/fuse.conf)", mnt)
	}
	return fmt.Errorf("mount %s: %w", mnt, err)
}

// onlyFolders reports whether dir holds nothing but folders that hold nothing but folders (a bounded walk, no
// symlink followed).
func onlyFolders(dir string, depth int) bool {
	ents, err := os.ReadDir(dir)
	if err != nil || depth > 16 || len(ents) > 1024 {
		return err == nil && len(ents) == 0
	}
	for _, e := range ents {
		if !e.IsDir() || !onlyFolders(filepath.Join(dir, e.Name()), depth+1) {
			return false
		}
	}
	return true
}
