package mount

import (
	"os"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

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
	// Confine is the mount's mode (Start): as root, the serving process confines itself unless its Mode is Off.
	Confine confine.Options
	// Takeover keeps a confined mount's FUSE connection past its serving process (package mount/takeover): the helper holds
	// it, and when the serving process dies it starts another, which takes the connection over: the mount's users
	// wait and go on. Without it, a killed daemon leaves a stale mount.
	Takeover bool
	// DockerVolumes, when set, is the name of a Docker volume plugin the privileged helper serves (package
	// dockervolume): each session is a volume of that driver. A confined root mount's only: its helper serves it.
	DockerVolumes string
}

// DefaultTimeout is how long the kernel may cache names and attributes that are not the store's files and
// folders (the synthetic folders, names found missing), and the store's own once a folder cannot be watched.
const DefaultTimeout = 30 * time.Second

// WatchedTimeout is how long the kernel may cache the store's names and attributes while the watcher follows
// every folder the kernel holds: a change made behind the mount then invalidates exactly what it changed, so
// the timeout only bounds what no event reports (a write through a shared mmap moves no mtime event).
const WatchedTimeout = time.Hour

// settle fills in the defaults of the kernel caches' timeout and of the node and bind limits for a mount of
// store. shared names a store other hosts change too ("" if none); watched is the longer timeout of the store's
// names while the watcher follows them (0: Timeout holds for everything).
func (o *Options) settle(store *layout.Store) (shared string, watched time.Duration) {
	shared, isShared := SharedStore(store.Root)
	if o.Shared && !isShared {
		shared, isShared = "--shared", true
	}
	if !isShared {
		shared = ""
	}
	switch { // the user's timeout, and a shared store's, hold for everything
	case o.Timeout != 0:
	case isShared:
		o.Timeout = SharedTimeout
	default:
		o.Timeout, watched = DefaultTimeout, WatchedTimeout
	}
	if o.MaxBinds == 0 {
		o.MaxBinds = DefaultMaxBinds
	}
	if o.MaxNodes == 0 {
		o.MaxNodes = nodes.DefaultMaxNodes
	}
	return shared, watched
}

// maxRead is the largest read and write the kernel sends (go-fuse's default), set here because a mount made by
// the daemon itself (mountDirect) must tell the kernel the same as it tells go-fuse.
const maxRead = 128 << 10

// fuseOptions are go-fuse's options for a mount of store with o settled. A confined mount is made by the daemon
// itself (mountDirect), with these options; go-fuse makes an unconfined one: as root with mount(2) itself, never
// falling back to fusermount, which a fresh machine lacks (and whose fallback would hide a broken direct mount); as
// a normal user through fusermount3, which turns options into flags.
func (o Options) fuseOptions(store *layout.Store, confined bool) *gofs.Options {
	mo := fuse.MountOptions{
		FsName:        store.Root,
		Name:          "sessionfs",
		AllowOther:    o.AllowOther,
		Debug:         o.Debug,
		MaxBackground: 64,
		MaxWrite:      maxRead,
		// Without it every write asks for security.capability first; with it the nodes clear suid/sgid.
		ExtraCapabilities: fuse.CAP_HANDLE_KILLPRIV_V2,
		// The kernel caches ACLs (ls -l asks for one per file) and checks permissions itself.
		EnableAcl: true,
		// Locks are taken on the store's files (nodes/locks.go): they must stop the ones taken through a bind.
		EnableLocks: true,
		// Flags go as flags: the kernel refuses them as data options with EINVAL. noatime: the store keeps its
		// own atimes.
		DirectMountFlags: syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOATIME,
	}
	if o.ReadOnly {
		mo.DirectMountFlags |= syscall.MS_RDONLY
	}
	root := os.Geteuid() == 0
	if o.AllowOther && root {
		// The kernel, not the daemon (which runs as root and could do anything), checks permissions.
		mo.Options = append(mo.Options, "default_permissions")
	}
	switch {
	case confined:
	case root:
		mo.DirectMountStrict = true
	default:
		mo.Options = append(mo.Options, "noatime")
		if o.ReadOnly {
			mo.Options = append(mo.Options, "ro")
		}
	}
	timeout := o.Timeout
	return &gofs.Options{
		MountOptions:    mo,
		EntryTimeout:    &timeout,
		AttrTimeout:     &timeout,
		NegativeTimeout: &timeout,
		// A file of mode 0000 is shown as 0000 (go-fuse would show 0644).
		NullPermissions: true,
	}
}
