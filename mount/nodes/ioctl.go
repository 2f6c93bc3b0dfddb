package nodes

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

var _ = (fs.NodeIoctler)((*Node)(nil))

// Ioctl answers a caller's ioctl on a file of the mount. go-fuse's loopback file would repeat any request on the
// store's file with the daemon's own privilege (root's SYS_ADMIN: a caller could rename or shut down the store's
// filesystem); only requests that read a file's own state are repeated, the rest get ENOTTY, as for a file that
// has no such ioctl. The confined daemon's seccomp filter allows the same few (confine/seccomp.go), so this holds
// with --confine off too.
func (n *Node) Ioctl(ctx context.Context, f fs.FileHandle, cmd uint32, arg uint64, input, output []byte) (int32, syscall.Errno) {
	io, ok := f.(fs.FileIoctler)
	if !ok || !forwardedIoctl(cmd) {
		return 0, syscall.ENOTTY
	}
	return io.Ioctl(ctx, cmd, arg, input, output)
}

// forwardedIoctl reports whether a caller's request is repeated on the store's file: lsattr's query of a file's
// flags (chattr's change is refused: its flags, such as immutable, are the store's to set).
func forwardedIoctl(cmd uint32) bool {
	return cmd == uint32(unix.FS_IOC_GETFLAGS)
}
